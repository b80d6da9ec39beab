package format

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"math/rand"
	"os"
	"path/filepath"
)

// go generate rewrites the seed corpora of FuzzOpen and FuzzRepair,
// testdata/fuzz/Fuzz{Open,Repair}/seed-*, with the captures of FuzzSeeds.
//go:generate go run ./internal/genseeds

// FuzzSeeds builds small captures with the Writer in dir, a scratch
// directory, and returns their bytes by name: each compression, loss
// records, strings, an empty capture, footerless and cut files, one
// rewritten by Repair, and one whose footer's counts (Meta.Counts) do not
// hold together. The fuzz tests start from them,
// and `go generate` writes them to testdata/fuzz (internal/genseeds); it
// is not part of the capture API.
func FuzzSeeds(dir string) (map[string][]byte, error) {
	seeds := map[string][]byte{}
	write := func(name string, comp Compression, n, batchRows int, forge ...func(*Counts)) ([]byte, error) {
		path := filepath.Join(dir, name)
		m := seedMeta()
		w, err := Create(path, m, WriterOptions{Compression: comp, BatchRows: batchRows})
		if err != nil {
			return nil, err
		}
		rng := rand.New(rand.NewSource(int64(n)))
		for i := 0; i < n; i++ {
			if i%7 == 3 {
				if err := w.Lost(uint16(i%len(m.Probes)), uint16(i%3), int64(i), uint64(i)); err != nil {
					return nil, err
				}
				continue
			}
			e := randEvent(rng, m, int64(i)*1000)
			if err := w.Append(&e); err != nil {
				return nil, err
			}
		}
		w.forgeCounts = func(c *Counts) {
			for _, f := range forge {
				f(c)
			}
		}
		if err := w.Close(); err != nil {
			return nil, err
		}
		data, err := os.ReadFile(path)
		if err != nil {
			return nil, err
		}
		seeds[name] = data
		return data, nil
	}
	zs, err := write("zstd", Zstd, 12, 5)
	if err != nil {
		return nil, err
	}
	if _, err := write("lz4", LZ4, 12, 5); err != nil {
		return nil, err
	}
	none, err := write("none", None, 12, 5)
	if err != nil {
		return nil, err
	}
	if _, err := write("empty", Zstd, 0, 5); err != nil {
		return nil, err
	}
	// A probe's events one more than the total: a reader refuses the
	// counts and reads the batches.
	if _, err := write("counts-forged", Zstd, 12, 5, func(c *Counts) { c.Probes[0].Events++ }); err != nil {
		return nil, err
	}
	st, err := stackSeed(filepath.Join(dir, "stacks"))
	if err != nil {
		return nil, err
	}
	seeds["stacks"] = st
	seeds["stacks-footerless"] = streamPart(st)
	seeds["zstd-footerless"] = streamPart(zs)
	seeds["none-cut"] = none[:len(none)*2/3]
	fixed := filepath.Join(dir, "repaired")
	if _, err := Repair(filepath.Join(dir, "lz4"), fixed); err != nil {
		return nil, err
	}
	data, err := os.ReadFile(fixed)
	if err != nil {
		return nil, err
	}
	seeds["lz4-repaired"] = data
	return seeds, nil
}

// seedMeta is a small probe table, for small seeds: an integer and a
// string field, a field-less probe.
func seedMeta() *Meta {
	return &Meta{Tool: "t", StartBoot: 1, Probes: []Probe{
		{Name: "p", Kind: "usdt", Fields: []Field{{Name: "a", Type: Int32}, {Name: "s", Type: String}}},
		{Name: "q", Kind: "tracepoint"},
	}}
}

// randEvent is a random event of one of m's probes at time t, drawn from
// rng: comms and strings of a few kinds (empty, UTF-8, longer than a
// short string), integers of any size.
func randEvent(rng *rand.Rand, m *Meta, t int64) Event {
	p := uint16(rng.Intn(len(m.Probes)))
	e := Event{Time: t, CPU: uint16(rng.Intn(4)), PID: uint32(100 + rng.Intn(3)), TID: uint32(200 + rng.Intn(5)), Probe: p}
	e.Comm = []byte([]string{"qemu-system-x86", "worker", "", "é-utf8"}[rng.Intn(4)])
	nf := len(m.Probes[p].Fields)
	e.Ints = make([]uint64, nf)
	e.Strs = make([][]byte, nf)
	for i, f := range m.Probes[p].Fields {
		if f.Type == String {
			e.Strs[i] = []byte([]string{"Hello!", "", "x", string(bytes.Repeat([]byte("s"), 300))}[rng.Intn(4)])
		} else {
			e.Ints[i] = rng.Uint64()
		}
	}
	return e
}

// streamPart cuts the footer off a complete capture, as a killed recorder
// leaves it (the end-of-stream marker stays: it is still a valid stream).
func streamPart(data []byte) []byte {
	n := int(binary.LittleEndian.Uint32(data[len(data)-10:]))
	return bytes.Clone(data[:len(data)-10-n])
}

// stackSeed writes a capture whose probe records a user and a kernel stack,
// with a stack table part in each of its batches.
func stackSeed(path string) ([]byte, error) {
	m := &Meta{Tool: "t", StartBoot: 1, Probes: []Probe{
		{Name: "leaf", Kind: "uprobe", Fields: []Field{{Name: "ustack", Type: UserStack}, {Name: "kstack", Type: KernelStack}}},
	}}
	w, err := Create(path, m, WriterOptions{BatchRows: 4})
	if err != nil {
		return nil, err
	}
	for i := 0; i < 10; i++ {
		user := []uint64{0x401000 + uint64(i%3), 0x402000, 0x403000}
		kernel := []uint64{0xffffffff81000000 + uint64(i%2), 0xffffffff81001000}
		uid, kid := StackID(false, user), StackID(true, kernel)
		w.AddStacks(&StackTable{
			Stacks:  []Stack{{ID: uid, Frames: user}, {ID: kid, Kernel: true, Frames: kernel}},
			Objects: []Object{{ID: 1, Path: "/bin/app", BuildID: "ab"}, {ID: 2, Path: "[kernel]", Kernel: true}},
			Maps:    []Mapping{{PID: 7, Since: 1, Start: 0x400000, End: 0x500000, Object: 1, Bias: 0}},
			Symbols: []Symbol{{Object: 1, Addr: 0x401000, Size: 0x10, Name: "leaf"}, {Object: 2, Addr: 0xffffffff81000000, Size: 0x1000, Name: "do_syscall_64"}},
		})
		e := Event{Time: int64(i), PID: 7, TID: 7, Comm: []byte("app"), Ints: []uint64{uid, kid}, Strs: make([][]byte, 2)}
		if err := w.Append(&e); err != nil {
			return nil, err
		}
	}
	if err := w.Close(); err != nil {
		return nil, err
	}
	return os.ReadFile(path)
}

// StackTableSeeds returns the JSON of a few stack table parts, as a writer
// writes them and as JSON allows beyond that (null, unknown keys, keys in
// another case, null entries), by name: the seeds of FuzzStackTable,
// whose corpus testdata/fuzz/FuzzStackTable/seed-* holds them. It is not
// part of the capture API.
func StackTableSeeds() map[string][]byte {
	seeds := map[string][]byte{
		"empty":   []byte(`{}`),
		"null":    []byte(`null`),
		"unknown": []byte(`{"future":{"x":[1,2.5e3,{"y":null}]},"stacks":[{"id":1,"frames":[4096],"new":true}],"n":-1}`),
		"case":    []byte(`{"Stacks":[{"ID":2,"Kernel":true,"Frames":[1,2]}],"MAPS":[null,{}]}`),
	}
	parts := []*StackTable{
		{
			Stacks:  []Stack{{ID: StackID(false, []uint64{0x401000, 0x402000}), Frames: []uint64{0x401000, 0x402000}}, {ID: StackID(true, []uint64{0xffffffff81000000}), Kernel: true, Frames: []uint64{0xffffffff81000000}}},
			Objects: []Object{{ID: 1, Path: "/bin/app", BuildID: "ab"}, {ID: 2, Path: "[kernel]", Kernel: true}, {ID: 3, Path: "/lib/stripped.so", NoSymbols: "no symbol table"}},
			Maps:    []Mapping{{PID: 7, Since: 1, Start: 0x400000, End: 0x500000, Offset: 0x1000, Object: 1, Bias: 0x400000}},
			Symbols: []Symbol{{Object: 1, Addr: 0x401000, Size: 0x10, Name: "leaf"}, {Object: 2, Addr: 0xffffffff81000000, Name: "do_syscall_64"}},
		},
		{Processes: []ProcessNote{{PID: 9, Reason: "exited before its mappings were read"}}},
	}
	for i, p := range parts {
		js, err := json.Marshal(p)
		if err != nil {
			panic(err) // a table always marshals
		}
		seeds[fmt.Sprint("part", i)] = js
	}
	return seeds
}
