//go:build !(linux && (amd64 || arm64))

package main

import "runtime"

// This build analyses captures and does not record: the recording verbs
// say so (recordverbs.go).
func init() {
	for _, v := range recordingVerbs {
		register(v.name, unsupportedSummary(v.summary, runtime.GOOS, runtime.GOARCH), unsupportedVerb(v.name, runtime.GOOS, runtime.GOARCH))
	}
}
