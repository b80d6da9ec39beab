package tracefs

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// tracingDir returns the live tracefs, skipping the test if there is none
// readable (not root, or no tracefs).
func tracingDir(t *testing.T) string {
	t.Helper()
	dir, err := Dir()
	if err != nil {
		t.Skipf("no tracefs: %v", err)
	}
	if _, err := os.ReadFile(filepath.Join(dir, "events/sched/sched_switch/format")); err != nil {
		t.Skipf("tracefs formats unreadable: %v", err)
	}
	return dir
}

func TestReadFormatLive(t *testing.T) {
	dir := tracingDir(t)
	tests := []struct {
		cat, event string
		want       []Field // checked fields, by name
	}{
		{"syscalls", "sys_exit_write", []Field{
			{Name: "__syscall_nr", CType: "int", Offset: 8, Size: 4, Signed: true, Kind: Int},
			{Name: "ret", CType: "long", Offset: 16, Size: 8, Signed: true, Kind: Int},
		}},
		{"syscalls", "sys_enter_openat", []Field{
			{Name: "dfd", CType: "int", Offset: 16, Size: 8, Kind: Int},
			{Name: "filename", CType: "const char *", Offset: 24, Size: 8, Kind: Int},
			{Name: "flags", CType: "int", Offset: 32, Size: 8, Kind: Int},
		}},
		{"sched", "sched_process_exec", []Field{
			{Name: "filename", CType: "__data_loc char[]", Offset: 8, Size: 4, Kind: DataLoc},
			{Name: "pid", CType: "pid_t", Offset: 12, Size: 4, Signed: true, Kind: Int},
			{Name: "old_pid", CType: "pid_t", Offset: 16, Size: 4, Signed: true, Kind: Int},
		}},
		{"sched", "sched_switch", []Field{
			{Name: "prev_comm", CType: "char[16]", Offset: 8, Size: 16, Kind: CharArray},
			{Name: "prev_pid", CType: "pid_t", Offset: 24, Size: 4, Signed: true, Kind: Int},
			{Name: "next_comm", CType: "char[16]", Offset: 40, Size: 16, Kind: CharArray},
		}},
	}
	for _, tt := range tests {
		t.Run(tt.cat+":"+tt.event, func(t *testing.T) {
			f, err := ReadFormat(dir, tt.cat, tt.event)
			if err != nil {
				t.Fatal(err)
			}
			if f.Category != tt.cat || f.Event != tt.event || f.ID == 0 {
				t.Errorf("got %s:%s id %d", f.Category, f.Event, f.ID)
			}
			for _, fl := range f.Fields {
				if strings.HasPrefix(fl.Name, "common_") {
					t.Errorf("common field %s kept", fl.Name)
				}
			}
			for _, w := range tt.want {
				got := f.Field(w.Name)
				if got == nil {
					t.Errorf("no field %s in %v", w.Name, f.FieldNames())
					continue
				}
				if *got != w {
					t.Errorf("field %s = %+v, want %+v", w.Name, *got, w)
				}
			}
		})
	}
}

func TestReadFormatUnknown(t *testing.T) {
	dir := tracingDir(t)
	tests := []struct {
		cat, event string
		want       []string
	}{
		{"sched", "sched_swtich", []string{"unknown tracepoint sched:sched_swtich", `"sched:sched_switch"`}},
		{"schde", "sched_switch", []string{`unknown tracepoint category "schde"`, `"sched"`}},
		{"sched", "sys_enter_openat", []string{"unknown tracepoint sched:sys_enter_openat", `"syscalls:sys_enter_openat"`}},
		{"sched", "../sched_switch", []string{"bad tracepoint name"}},
	}
	for _, tt := range tests {
		_, err := ReadFormat(dir, tt.cat, tt.event)
		if err == nil {
			t.Errorf("ReadFormat(%s:%s) succeeded", tt.cat, tt.event)
			continue
		}
		for _, w := range tt.want {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("ReadFormat(%s:%s) error %q does not contain %q", tt.cat, tt.event, err, w)
			}
		}
	}
}

// TestList lists the live tracepoints: sorted, each category:event once,
// and each a directory with a format file. Filtering is record's
// (record.TestListTracepoints).
func TestList(t *testing.T) {
	dir := tracingDir(t)
	all, err := List(dir)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.IsSorted(all) || !slices.Contains(all, "sched:sched_switch") || !slices.Contains(all, "syscalls:sys_enter_openat") {
		t.Fatalf("List has %d names, unsorted or missing sched:sched_switch", len(all))
	}
	if len(slices.Compact(slices.Clone(all))) != len(all) {
		t.Error("List has a name twice")
	}
	for _, n := range all {
		c, e, err := SplitName(n)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := os.Stat(filepath.Join(dir, "events", c, e, "format")); err != nil {
			t.Errorf("%s: %v", n, err)
		}
	}
	if _, err := List(t.TempDir()); err == nil {
		t.Error("List of a folder without events/ succeeded")
	}
}

func TestReadFormatFakeDir(t *testing.T) {
	dir := t.TempDir()
	ev := filepath.Join(dir, "events", "vhost_net", "vhost_net_tx_end")
	if err := os.MkdirAll(ev, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(dir, "events", "vhost_net", "vhost_net_rx_end"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(ev, "format"), []byte(vhostNetTxEnd), 0o644); err != nil {
		t.Fatal(err)
	}
	f, err := ReadFormat(dir, "vhost_net", "vhost_net_tx_end")
	if err != nil {
		t.Fatal(err)
	}
	if f.Category != "vhost_net" || len(f.Fields) != 2 || f.Fields[1].Name != "total_len" {
		t.Errorf("got %+v", f)
	}
	_, err = ReadFormat(dir, "vhost_net", "vhost_net_tx_ned")
	if err == nil || !strings.Contains(err.Error(), `"vhost_net:vhost_net_tx_end"`) {
		t.Errorf("error %v lacks suggestion", err)
	}
	names, err := List(dir)
	if err != nil || !slices.Equal(names, []string{"vhost_net:vhost_net_rx_end", "vhost_net:vhost_net_tx_end"}) {
		t.Errorf("List = %v, %v", names, err)
	}
}

func TestSplitName(t *testing.T) {
	tests := []struct {
		in, cat, ev string
		ok          bool
	}{
		{"sched:sched_switch", "sched", "sched_switch", true},
		{"sched/sched_switch", "sched", "sched_switch", true},
		{"sched_switch", "", "", false},
		{":x", "", "", false},
		{"x:", "", "", false},
		{"a:b:c", "", "", false},
	}
	for _, tt := range tests {
		c, e, err := SplitName(tt.in)
		if (err == nil) != tt.ok || c != tt.cat || e != tt.ev {
			t.Errorf("SplitName(%q) = %q, %q, %v", tt.in, c, e, err)
		}
	}
}

// TestReadFormatAllLive parses every format on this kernel: none may fail.
func TestReadFormatAllLive(t *testing.T) {
	dir := tracingDir(t)
	names, err := List(dir)
	if err != nil {
		t.Fatal(err)
	}
	kinds := map[FieldKind]int{}
	for _, n := range names {
		cat, ev, err := SplitName(n)
		if err != nil {
			t.Fatal(err)
		}
		f, err := ReadFormat(dir, cat, ev)
		if err != nil {
			t.Errorf("%s: %v", n, err)
			continue
		}
		for _, fl := range f.Fields {
			kinds[fl.Kind]++
			if os.Getenv("TRACEFS_DUMP") != "" {
				t.Logf("%s %s %q %d %d %v %v", n, fl.Name, fl.CType, fl.Offset, fl.Size, fl.Signed, fl.Kind)
			}
		}
	}
	t.Logf("%d events, field kinds %v", len(names), kinds)
}

// TestFindMatchesDir: where tracefs is mounted, Find names the directory
// Dir returns, without mounting anything.
func TestFindMatchesDir(t *testing.T) {
	dir, ok := Find()
	if !ok {
		t.Skip("tracefs is not mounted with events/ (Find would leave mounting it to Dir)")
	}
	if _, err := os.Stat(filepath.Join(dir, "events")); err != nil {
		t.Fatalf("Find: %s, but %v", dir, err)
	}
	got, err := Dir()
	if err != nil || got != dir {
		t.Errorf("Dir() = %q, %v; Find() = %q", got, err, dir)
	}
}

func TestFunctionsFakeDir(t *testing.T) {
	dir := t.TempDir()
	list := "vfs_read\nvfs_write\nloop_queue_rq [loop]\nshow_map\nshow_map\nvfs_readv\n"
	if err := os.WriteFile(filepath.Join(dir, "available_filter_functions"), []byte(list), 0o644); err != nil {
		t.Fatal(err)
	}
	fns, err := Functions(dir)
	if err != nil {
		t.Fatal(err)
	}
	want := []Func{{Name: "loop_queue_rq", Module: "loop"}, {Name: "show_map", Dups: 1}, {Name: "vfs_read"}, {Name: "vfs_readv"}, {Name: "vfs_write"}}
	if !slices.Equal(fns, want) {
		t.Errorf("Functions = %+v, want %+v", fns, want)
	}
	if _, err := Functions(t.TempDir()); err == nil {
		t.Error("Functions of a folder without the list succeeded")
	}
}
