package stacktable

import (
	"fmt"
	"slices"

	"github.com/bpftape/bpftape/record/kallsyms"
)

// maxModules bounds the module objects taken from kallsyms.
const maxModules = 1 << 16

// kernelSyms is the kernel's symbol table, from kallsyms: its functions
// and those of its modules, by address.
type kernelSyms struct {
	tab  symtab
	mod  []uint32  // per symbol, its object in objs
	objs []*object // [kernel], then one per module ("[ext4]")
	err  string    // why there are no symbols
}

// ReadKernelSymbols reads kallsyms now rather than at the first kernel
// stack. A recorder of kernel stacks calls it while it loads its programs:
// read at the first stack, in the drain loop, it stalled the drain for
// 70-120 ms on the 6.18 host (122,000 lines), seconds on a loaded host,
// and the rings filled meanwhile (see doc.go).
func (c *Collector) ReadKernelSymbols() { c.kernel() }

// kernel returns the kernel's symbols, reading kallsyms the first time.
func (c *Collector) kernel() *kernelSyms {
	if c.kern == nil {
		c.kern = readKallsyms(c.kallsyms)
	}
	return c.kern
}

// ksym is a kallsyms line.
type ksym struct {
	addr uint64
	typ  byte
	name string
	mod  uint32
}

// readKallsyms reads the kernel's symbols from path (kallsyms.Path). A
// symbol's size is the distance to the next symbol of any type; only
// functions (types t, T, w, W) are kept, one name per address (see
// better).
func readKallsyms(path string) *kernelSyms {
	k := &kernelSyms{objs: []*object{{path: "[kernel]", kernel: true, loaded: true, buildIDFrom: "/sys/kernel/notes"}}}
	fail := func(why string) *kernelSyms {
		k.err, k.objs[0].noSymbols = why, why
		k.tab, k.mod = symtab{}, nil
		return k
	}
	mods := map[string]uint32{}
	// Fresh memory costs a page fault a page (15-20 µs on the 6.18 VM):
	// one slice the size of a distribution kernel's kallsyms (122,000
	// lines) rather than doublings, and names only for functions.
	all := make([]ksym, 0, 1<<17)
	lines, err := kallsyms.Read(path, func(ks *kallsyms.Symbol) {
		if ks.Addr == 0 || ks.Type == 'a' || ks.Type == 'A' || ks.Type == 'U' {
			return
		}
		s := ksym{addr: ks.Addr, typ: ks.Type}
		if kallsyms.IsFunc(ks.Type) {
			s.name = string(ks.Name)
		}
		if m := ks.Module; m != nil {
			if len(m) < 3 || m[0] != '[' || m[len(m)-1] != ']' {
				return
			}
			name := string(m[1 : len(m)-1])
			id, ok := mods[name]
			if !ok {
				if len(k.objs) >= maxModules {
					return
				}
				id = uint32(len(k.objs))
				mods[name] = id
				o := &object{path: "[" + name + "]", kernel: true, loaded: true}
				if safeName(name) {
					o.buildIDFrom = "/sys/module/" + name + "/notes/.note.gnu.build-id"
				}
				k.objs = append(k.objs, o)
			}
			s.mod = id
		}
		all = append(all, s)
	})
	if err != nil {
		return fail(fmt.Sprintf("kallsyms could not be read: %v", err))
	}
	if len(all) == 0 {
		if lines > 0 {
			return fail("kallsyms shows no addresses (kernel.kptr_restrict: record as root)")
		}
		return fail("kallsyms is empty")
	}
	slices.SortStableFunc(all, func(a, b ksym) int {
		switch {
		case a.addr < b.addr:
			return -1
		case a.addr > b.addr:
			return 1
		}
		return 0
	})
	n := 0 // addresses with a function
	for i, s := range all {
		if kallsyms.IsFunc(s.typ) && (i == 0 || all[i-1].addr != s.addr || !kallsyms.IsFunc(all[i-1].typ)) {
			n++
		}
	}
	k.tab.syms, k.mod = make([]sym, 0, n), make([]uint32, 0, n)
	for i := 0; i < len(all); {
		j := i + 1
		for j < len(all) && all[j].addr == all[i].addr {
			j++
		}
		var size uint64
		if j < len(all) {
			size = all[j].addr - all[i].addr
		}
		best := -1
		for n := i; n < j; n++ {
			if kallsyms.IsFunc(all[n].typ) && (best < 0 || better(kcand(all[n], size), kcand(all[best], size))) {
				best = n
			}
		}
		if best >= 0 {
			k.tab.syms = append(k.tab.syms, sym{addr: all[best].addr, size: size, name: all[best].name})
			k.mod = append(k.mod, all[best].mod)
		}
		i = j
	}
	if len(k.tab.syms) == 0 {
		return fail("kallsyms has no function symbols")
	}
	return k
}

func kcand(s ksym, size uint64) cand {
	return cand{addr: s.addr, size: size, name: s.name, global: s.typ == 'T' || s.typ == 'W', weak: s.typ == 'w' || s.typ == 'W'}
}

// safeName reports whether a module name may be put in a /sys path.
func safeName(s string) bool {
	if s == "" {
		return false
	}
	for _, r := range s {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '_' || r == '-') {
			return false
		}
	}
	return true
}
