// Package check validates the settings of a configuration with messages that name the
// setting by its name (the configuration field's json name, which is its flag's name) and
// value: "batch 0: must be > 0". A library reports them so; a command words them as its
// flags with Flag ("-batch 0: must be > 0").
package check

import (
	"errors"
	"fmt"
	"strings"
)

// Error is an invalid setting.
type Error struct {
	Name   string // the setting's name
	Value  string // its value as the message shows it ("": not shown)
	Reason string // what is wrong
}

func (e *Error) Error() string {
	if e.Value == "" {
		return e.Name + ": " + e.Reason
	}
	return e.Name + " " + e.Value + ": " + e.Reason
}

// Invalid returns an *Error for the setting name of value v (shown with %v).
func Invalid(name string, v any, reason string) error {
	return &Error{Name: name, Value: fmt.Sprint(v), Reason: reason}
}

// Quoted returns an *Error for the string setting name of value s (shown quoted).
func Quoted(name, s, reason string) error {
	return &Error{Name: name, Value: fmt.Sprintf("%q", s), Reason: reason}
}

// Positive returns an error naming the setting when v <= 0.
func Positive[T int | int64 | uint64 | float64](name string, v T) error {
	if v <= 0 {
		return Invalid(name, v, "must be > 0")
	}
	return nil
}

// NonNegative returns an error naming the setting when v < 0.
func NonNegative[T int | int64 | float64](name string, v T) error {
	if v < 0 {
		return Invalid(name, v, "must be >= 0")
	}
	return nil
}

// Fraction returns an error naming the setting unless 0 < v < 1.
func Fraction(name string, v float64) error {
	if !(v > 0 && v < 1) {
		return Invalid(name, v, "must be in (0, 1)")
	}
	return nil
}

// First returns the first non-nil error.
func First(errs ...error) error {
	for _, e := range errs {
		if e != nil {
			return e
		}
	}
	return nil
}

// Flag returns err worded for the command line: the setting an *Error in its chain names
// becomes its flag ("-batch 0: must be > 0"). Other errors, and nil, are returned as they
// are; errors.Is and errors.As still see err.
func Flag(err error) error {
	var e *Error
	if !errors.As(err, &e) {
		return err
	}
	msg := err.Error()
	i := strings.Index(msg, e.Error())
	if i < 0 || i > 0 && msg[i-1] == '-' {
		return err
	}
	return &flagError{msg[:i] + "-" + msg[i:], err}
}

type flagError struct {
	msg string
	err error
}

func (e *flagError) Error() string { return e.msg }
func (e *flagError) Unwrap() error { return e.err }
