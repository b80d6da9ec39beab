// Package layering holds no code: its test checks that no bpftape package
// imports a package on a floor above its own, that record and replay do
// not import each other, and that inside record no package imports one in a
// higher room (record/host below record/resolve below record). The floors
// and rooms tables are in layering_test.go.
package layering
