//go:build !unix

package gateway

// lockSpool does nothing where flock is not available: give each gateway replica its own
// state directory there.
func lockSpool(path string) (unlock func(), err error) { return func() {}, nil }
