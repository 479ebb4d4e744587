package encoder

import (
	"encoding/json"
	"fmt"
)

// MarshalConfig returns the JSON form of a model configuration (a bi-encoder's,
// classifier's, ... Config holding an encoder) as runs and checkpoints store it: indented,
// ending in a newline.
func MarshalConfig(c any) []byte {
	b, _ := json.MarshalIndent(c, "", "  ")
	return append(b, '\n')
}

// UnmarshalConfig parses a model configuration stored by MarshalConfig and validates it;
// what names it in errors ("biencoder config").
func UnmarshalConfig[T any, P interface {
	*T
	Validate() error
}](b []byte, what string) (*T, error) {
	var c T
	if err := json.Unmarshal(b, &c); err != nil {
		return nil, fmt.Errorf("%s: %w", what, err)
	}
	if err := P(&c).Validate(); err != nil {
		return nil, err
	}
	return &c, nil
}
