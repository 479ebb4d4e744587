-- The tool library that toolret serve replicas share: its head version, its tools and the
-- log of the updates that made them (serve.PGStore).

-- The head: the version the library is at, and the model its tools were embedded by (every
-- replica must serve that model). One row, written when the first replica seeds the library.
CREATE TABLE library_head (
	id         boolean PRIMARY KEY DEFAULT true CHECK (id),
	version    bigint NOT NULL,
	model      text NOT NULL,
	dim        integer NOT NULL,
	seeded_at  timestamptz NOT NULL DEFAULT now(),
	seeded_by  text NOT NULL
);

-- The tools of the head version: the index record (id, title, text, category, tool_name,
-- api_name) and the embedding (dim little-endian float32), with the version that last put it.
CREATE TABLE library_tools (
	id         text PRIMARY KEY,
	record     jsonb NOT NULL,
	embedding  bytea NOT NULL,
	version    bigint NOT NULL
);

-- The update log: one row a version after the seed, in the same transaction as the head
-- and the tools it changes. put holds the records put, embeddings their embeddings one
-- after the other, deleted the ids deleted.
CREATE TABLE library_log (
	version       bigint PRIMARY KEY,
	put           jsonb NOT NULL,
	embeddings    bytea NOT NULL,
	deleted       text[] NOT NULL,
	committed_at  timestamptz NOT NULL DEFAULT now(),
	committed_by  text NOT NULL
);
