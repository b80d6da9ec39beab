package probespec

import (
	"strings"
	"testing"

	"github.com/bpftape/bpftape/format"
)

// TestParams: which recorded fields are a function's parameters, which
// argN then names.
func TestParams(t *testing.T) {
	u := func(spec string, names ...string) *format.Probe {
		p := &format.Probe{Name: "p", Kind: "uprobe", Spec: spec}
		for _, n := range names {
			p.Fields = append(p.Fields, format.Field{Name: n, Type: format.Uint64})
		}
		return p
	}
	for _, tt := range []struct {
		p    *format.Probe
		want string
	}{
		{u("u:./prog:rx", "nc", "buf", "size"), "nc buf size"},
		{u("p=u:./prog:rx /size > 10/", "nc", "buf", "size"), "nc buf size"},
		{u("u:./prog:rx", "arg0", "buf"), "arg0 buf"}, // an unnamed parameter
		{u("u:./prog:rx", "nc", "arg2"), ""},          // arg1 left out
		{u("u:./prog:rx", "arg0", "arg1", "arg2", "arg3", "arg4", "arg5"), ""},
		{u("u:./prog:rx(nc,buf,size)", "nc", "buf", "size"), ""},
		{u("u:./prog:rx(size)", "size"), ""},
		{u("not a spec", "nc"), ""},
		{&format.Probe{Kind: "uprobe", Spec: "u:./prog:rx", Fields: []format.Field{{Name: "s", Type: format.String}}}, ""},
		{&format.Probe{Kind: "uretprobe", Spec: "ur:./prog:rx", Fields: []format.Field{{Name: "retval", Type: format.Int64}}}, ""},
		{&format.Probe{Kind: "usdt", Spec: "U:./prog:p:rx", Fields: []format.Field{{Name: "arg0", Type: format.Int64}}}, ""},
		{&format.Probe{Kind: "tracepoint", Spec: "t:syscalls:sys_exit_write", Fields: []format.Field{{Name: "ret", Type: format.Int64}}}, ""},
		{&format.Probe{Kind: "fentry", Spec: "f:vfs_read", Fields: []format.Field{
			{Name: "file", Type: format.Uint64}, {Name: "buf", Type: format.Uint64}, {Name: "count", Type: format.Uint64}, {Name: "pos", Type: format.Uint64}}}, "file buf count pos"},
		{&format.Probe{Kind: "fexit", Spec: "fr:vfs_read", Fields: []format.Field{
			{Name: "file", Type: format.Uint64}, {Name: "count", Type: format.Uint64}, {Name: "retval", Type: format.Int64}}}, "file count"},
		{&format.Probe{Kind: "kprobe", Spec: "k:vfs_read", Fields: []format.Field{{Name: "arg0", Type: format.Uint64}, {Name: "arg1", Type: format.Uint64}}}, ""},
	} {
		if got := strings.Join(Params(tt.p), " "); got != tt.want {
			t.Errorf("%s %v: params %q, want %q", tt.p.Spec, tt.p.Fields, got, tt.want)
		}
	}
}
