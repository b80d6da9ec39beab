// Package layering holds no code: its test checks that no bpftape package
// imports a package on a floor above its own, and that record and replay do
// not import each other. The floors table is in layering_test.go.
package layering
