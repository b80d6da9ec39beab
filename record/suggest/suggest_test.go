package suggest

import (
	"slices"
	"testing"
)

func TestClosest(t *testing.T) {
	events := []string{"sched_switch", "sched_wakeup", "sched_wakeup_new", "sched_process_exec", "sched_process_exit", "sched_stat_runtime"}
	syms := []string{"malloc", "calloc", "realloc", "free", "__libc_malloc", "malloc_usable_size", "memcpy", "memset", "puts"}
	tests := []struct {
		desc       string
		name       string
		candidates []string
		n          int
		want       []string
	}{
		{"transposition", "sched_swtich", events, 3, []string{"sched_switch"}},
		{"substitution", "sched_switsh", events, 3, []string{"sched_switch"}},
		{"missing letter", "sched_wakup", events, 3, []string{"sched_wakeup"}},
		{"case", "SCHED_SWITCH", events, 3, []string{"sched_switch"}},
		{"substring ranks by distance", "wakeup", events, 5, []string{"sched_wakeup", "sched_wakeup_new"}},
		{"prefix", "sched_process", events, 5, []string{"sched_process_exec", "sched_process_exit"}},
		{"n limits", "sched_process", events, 1, []string{"sched_process_exec"}},
		{"candidate inside name", "sched_switch_foo", events, 3, []string{"sched_switch"}},
		{"case before substring before edit", "Malloc", syms, 4, []string{"malloc", "__libc_malloc", "malloc_usable_size", "calloc"}},
		{"edit only, by distance", "mallok", syms, 3, []string{"malloc", "calloc"}},
		{"short name small threshold", "fre", syms, 3, []string{"free"}},
		{"nothing close", "zzzzzzzz", syms, 3, nil},
		{"exact is not suggested", "puts", syms, 3, nil},
		{"empty name", "", syms, 3, nil},
		{"zero n", "malloc", syms, 0, nil},
		{"no candidates", "malloc", nil, 3, nil},
		{"duplicates once", "mallok", []string{"malloc", "malloc", "calloc"}, 3, []string{"malloc", "calloc"}},
		{"one-char candidates do not match by containment", "abc", []string{"a", "b", "abd"}, 3, []string{"abd"}},
	}
	for _, tt := range tests {
		t.Run(tt.desc, func(t *testing.T) {
			got := Closest(tt.name, tt.candidates, tt.n)
			if !slices.Equal(got, tt.want) {
				t.Errorf("Closest(%q, ..., %d) = %q, want %q", tt.name, tt.n, got, tt.want)
			}
		})
	}
}

func TestDistance(t *testing.T) {
	tests := []struct {
		a, b string
		want int
	}{
		{"", "", 0},
		{"", "abc", 3},
		{"abc", "", 3},
		{"abc", "abc", 0},
		{"abc", "abd", 1},
		{"abc", "acb", 1},
		{"kitten", "sitting", 3},
		{"ca", "abc", 3},
		{"héllo", "hello", 1},
	}
	for _, tt := range tests {
		if got := Distance(tt.a, tt.b); got != tt.want {
			t.Errorf("Distance(%q, %q) = %d, want %d", tt.a, tt.b, got, tt.want)
		}
	}
}

func TestHint(t *testing.T) {
	if got := Hint(nil); got != "" {
		t.Errorf("Hint(nil) = %q", got)
	}
	if got, want := Hint([]string{"a", "b\"c"}), `; did you mean "a", "b\"c"?`; got != want {
		t.Errorf("Hint = %q, want %q", got, want)
	}
}
