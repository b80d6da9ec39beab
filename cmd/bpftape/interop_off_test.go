//go:build !interop

package main

// interopTests is false without -tags interop (make unit, go test ./...):
// see interop_on_test.go.
const interopTests = false
