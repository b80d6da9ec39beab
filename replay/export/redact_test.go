package export

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/bpftape/bpftape/format"
)

func TestRedactSpec(t *testing.T) {
	for _, tt := range []struct{ in, want string }{
		{"rx=u:/home/a/bin/qemu:virtio_net_receive_rcu(arg2)", "rx=u:qemu:virtio_net_receive_rcu(arg2)"},
		{"u:./prog:tick", "u:prog:tick"},
		{"u:qemu-system-x86_64:f", "u:qemu-system-x86_64:f"},
		{"tx=U:/usr/lib/x86_64-linux-gnu/libfoo.so.1:prov:tx(arg0)", "tx=U:libfoo.so.1:prov:tx(arg0)"},
		{"t:syscalls:sys_enter_openat(str(filename))", "t:syscalls:sys_enter_openat(str(filename))"},
		{"not a spec /home/a", ""},
	} {
		if got := redactSpec(tt.in); got != tt.want {
			t.Errorf("redactSpec(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

// TestRedactMetaMerged: a merged capture's inputs are redacted like the
// capture itself, facts naming hosts or files go, numbers stay, and the
// input meta is left alone.
func TestRedactMetaMerged(t *testing.T) {
	in := &format.Meta{
		Host: "a.example", CommandLine: []string{"bpftape", "merge", "/home/u/a.arrow"},
		Probes: []format.Probe{{Name: "rx", Spec: "rx=u:/opt/x/bin/srv:f(str(arg0),arg1)", Target: "/opt/x/bin/srv",
			Fields: []format.Field{{Name: "arg0", Type: format.String}, {Name: "arg1", Type: format.Uint64}, {Name: "host", Type: format.String}}}},
		Extra: map[string]string{"merged": "2 captures from 2 hosts", "time_base": "boot clock of a.example; ...", "pid": "7"},
		Inputs: []format.Meta{
			{Host: "a.example", CommandLine: []string{"bpftape", "record", "-c", "/opt/x/bin/srv"},
				Extra: map[string]string{"merge.file": "/home/u/a.arrow", "merge.time_shift_ns": "12", "command": "/opt/x/bin/srv"}},
			{Host: "b.example", Extra: map[string]string{"merge.file": "/home/u/b.arrow", "comm": "srv"}},
		},
	}
	before, _ := json.Marshal(in)
	r, err := RedactMeta(in)
	if err != nil {
		t.Fatal(err)
	}
	if after, _ := json.Marshal(in); string(after) != string(before) {
		t.Errorf("RedactMeta changed its input")
	}
	js, _ := json.Marshal(r)
	for _, s := range []string{"a.example", "b.example", "/home/u", "/opt/x", "time_base", "merge.file"} {
		if strings.Contains(string(js), s) {
			t.Errorf("redacted meta holds %q: %s", s, js)
		}
	}
	if r.Extra["merged"] == "" || r.Extra["pid"] != "7" || r.Inputs[0].Extra["merge.time_shift_ns"] != "12" {
		t.Errorf("redacted meta lost numbers: %s", js)
	}
	if r.Extra[RedactedFieldsKey] != "rx.arg0,rx.host" || len(r.Probes[0].Fields) != 1 || r.Probes[0].Target != "srv" {
		t.Errorf("redacted probes: %s", js)
	}
}

// TestRedactFilters: the comms a filter names (in the probe's filter and
// in its spec) are redacted; the rest of the filter stays.
func TestRedactFilters(t *testing.T) {
	in := &format.Meta{Probes: []format.Probe{{Name: "rx", Spec: `rx=u:/opt/x/bin/srv:f(arg1)/arg1 > 4 && comm == "secret-build" || comm != "a\"b"/`,
		Filter: `arg1 > 4 && comm == "secret-build" || comm != "a\"b"`, Fields: []format.Field{{Name: "arg1", Type: format.Uint64}}}}}
	r, err := RedactMeta(in)
	if err != nil {
		t.Fatal(err)
	}
	p := r.Probes[0]
	if want := `arg1 > 4 && comm == "?" || comm != "?"`; p.Filter != want {
		t.Errorf("filter %q, want %q", p.Filter, want)
	}
	if want := `rx=u:srv:f(arg1)/arg1 > 4 && comm == "?" || comm != "?"/`; p.Spec != want {
		t.Errorf("spec %q, want %q", p.Spec, want)
	}
}

// TestRedactLinuxPaths: the paths a capture holds are the recording
// host's, Linux paths, where a backslash is an ordinary byte of a name:
// they are cut at '/' alone, so that a capture redacts the same on every
// system the analyzer runs on (Windows' filepath would cut at '\' too).
func TestRedactLinuxPaths(t *testing.T) {
	st := RedactStacks(&format.StackTable{Objects: []format.Object{
		{Path: `/opt/a\b/lib\x.so`},
		{Path: `/usr/bin/prog`},
		{Path: "[kernel]", Kernel: true},
	}})
	for i, want := range []string{`lib\x.so`, "prog", "[kernel]"} {
		if got := st.Objects[i].Path; got != want {
			t.Errorf("object %d: %q, want %q", i, got, want)
		}
	}
	if got, want := redactSpec(`u:/opt/a\b/x\y:f`), `u:x\y:f`; got != want {
		t.Errorf("redactSpec = %q, want %q", got, want)
	}
}
