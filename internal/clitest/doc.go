// Package clitest holds no code: its test builds every command under cmd/ and runs each one
// on bad flags and bad files (out-of-range numbers, unknown flags and subcommands, stray
// arguments, missing required flags, malformed datasets, missing or corrupt run directories,
// truncated checkpoints, mismatched vocabularies, resuming with changed flags), checking that
// each exits non-zero with a message naming the flag, file, line, field or tensor, never
// panics and never hangs.
package clitest
