package evalcmd

import "strings"

// runTag returns -run-tag, or toolret-<method>.
func runTag(o *options) string {
	if o.runTag != "" {
		return o.runTag
	}
	if o.run != "" {
		return "toolret-run"
	}
	return "toolret-" + strings.Join(strings.Fields(o.method), "-")
}
