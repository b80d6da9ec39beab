package stacktable

import "testing"

// BenchmarkReadKallsyms reads this host's /proc/kallsyms as a recorder of
// kernel stacks does.
func BenchmarkReadKallsyms(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		if k := readKallsyms("/proc/kallsyms"); k.err != "" {
			b.Fatal(k.err)
		}
	}
}
