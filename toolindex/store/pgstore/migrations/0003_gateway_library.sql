-- The tool gateway's library (package library, JSON Lines: every tool's full definition,
-- input schema included), which the -library file seeds and re-imports replace; one row.
-- A change NOTIFYs toolret_library too, so that every replica reloads it.
CREATE TABLE gateway_library (
	id          boolean PRIMARY KEY DEFAULT true CHECK (id),
	body        bytea NOT NULL,
	sha256      text NOT NULL,
	updated_at  timestamptz NOT NULL DEFAULT now(),
	updated_by  text NOT NULL
);
