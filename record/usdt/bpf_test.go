package usdt

import (
	"errors"
	"fmt"
	"os/exec"
	"slices"
	"strings"
	"testing"

	"github.com/cilium/ebpf/link"

	"github.com/bpftape/bpftape/bpf"
	"github.com/bpftape/bpftape/internal/testutil"
)

// TestRecordBPF attaches bpftape's uprobe program at every site of every
// probe of the example, with the specs Read produces (the semaphore through
// ref_ctr_offset), runs it, and checks every recorded value, which proves
// the arguments' registers, sizes, signs, memory and %rip-relative operands
// end to end.
func TestRecordBPF(t *testing.T) {
	testutil.RequireBPF(t, bpf.CheckFeatures)
	for _, b := range builds {
		t.Run(b.name, func(t *testing.T) { recordBPF(t, b.flags) })
	}
}

// strArgs names, per probe, the args recorded as strings.
var strArgs = map[string][]int{
	"usdt-examples:usdt2": {1},
	"usdt-examples:types": {9},
}

func recordBPF(t *testing.T, flags []string) {
	exe := buildExample(t, flags...)
	probes, err := Read(exe)
	if err != nil {
		t.Fatal(err)
	}
	objs, err := bpf.Load(bpf.Options{RingSize: 1 << 16})
	if err != nil {
		t.Fatal(err)
	}
	defer objs.Close()
	if err := objs.Arm(true); err != nil {
		t.Fatal(err)
	}
	ex, err := link.OpenExecutable(exe)
	if err != nil {
		t.Fatal(err)
	}

	var cookie uint32
	names := map[uint16]string{} // probe id -> provider:name
	for i := range probes {
		p := &probes[i]
		id := uint16(i + 1)
		names[id] = p.String()
		for _, site := range p.Sites {
			spec := bpf.ProbeSpec{ProbeId: id, SizeClass: bpf.ClassArgs12, Nargs: uint8(len(site.Args))}
			ints, err := site.BPFArgs()
			if err != nil {
				t.Fatalf("%s: %v", p, err)
			}
			copy(spec.Args[:], ints)
			for _, j := range strArgs[p.String()] {
				s, err := site.Args[j].BPFString(spec.Nstr)
				if err != nil {
					t.Fatalf("%s arg %d: %v", p, j, err)
				}
				spec.Args[j] = s
				spec.Nstr++
				spec.SizeClass = bpf.ClassArgs12Str4
			}
			if err := objs.PutSpec(cookie, &spec); err != nil {
				t.Fatalf("%s: %v", p, err)
			}
			l, err := ex.Uprobe("", objs.ProbeUprobe, &link.UprobeOptions{
				Address: site.Location, RefCtrOffset: p.Semaphore, Cookie: uint64(cookie)})
			if err != nil {
				t.Fatalf("%s: attach at %#x: %v", p, site.Location, err)
			}
			defer l.Close()
			cookie++
		}
	}

	rd, err := objs.NewRing()
	if err != nil {
		t.Fatal(err)
	}
	defer rd.Close()
	cmd := exec.Command(exe)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("workload: %v\n%s", err, out)
	}
	pid := uint32(cmd.Process.Pid)
	if err := rd.Flush(); err != nil {
		t.Fatal(err)
	}
	got := map[string][]string{}
	err = rd.Drain(0, func(raw []byte) error {
		h, err := bpf.DecodeHeader(raw)
		if err != nil {
			return err
		}
		if h.PID != pid || h.Class == bpf.ClassComm {
			return nil
		}
		name := names[h.ProbeID]
		var vals []string
		for i := range int(h.Nargs) {
			if slices.Contains(strArgs[name], i) {
				vals = append(vals, fmt.Sprintf("%q", bpf.Str(raw, countStr(strArgs[name], i))))
				continue
			}
			vals = append(vals, fmt.Sprint(int64(bpf.Arg(raw, i))))
		}
		if h.Flags != 0 {
			vals = append(vals, fmt.Sprintf("flags=%d", h.Flags))
		}
		got[name] = append(got[name], strings.Join(vals, " "))
		return nil
	})
	if !errors.Is(err, bpf.ErrRingFlushed) {
		t.Fatal(err)
	}

	want := map[string][]string{
		"usdt-examples:usdt2": {`1000000 "Hello!" 5`},
		"usdt-examples:types": {`-5 250 -1000 60000 -70000 4000000000 -5000000000 -42 -1 "str"`},
		// argc is 1: acc = 1, then acc*31+i for i in 0..3.
		"usdt-examples:tick": {"0 31", "1 962", "2 29824", "3 924547", "100 924548", "1 -924547"},
		"guarded:fire":       {"0 3", "1 3", "2 3"},
	}
	for x := 100000; x <= 1000000; x += 100000 {
		want["usdt-examples:usdt1"] = append(want["usdt-examples:usdt1"], fmt.Sprint(x))
	}
	for name, w := range want {
		if !slices.Equal(got[name], w) {
			t.Errorf("%s recorded\n  %q\nwant\n  %q", name, got[name], w)
		}
	}
}

// countStr counts the string args before index i.
func countStr(strs []int, i int) int {
	n := 0
	for _, j := range strs {
		if j < i {
			n++
		}
	}
	return n
}
