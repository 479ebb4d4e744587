package evalcmd

import "strings"

// runTag returns -run-tag, or toolret-run, toolret-index, toolret-model or toolret-<method>.
func runTag(o *options) string {
	switch {
	case o.runTag != "":
		return o.runTag
	case o.run != "":
		return "toolret-run"
	case o.model != "":
		return "toolret-model"
	case o.index != "":
		return "toolret-index"
	}
	return "toolret-" + strings.Join(strings.Fields(o.method), "-")
}
