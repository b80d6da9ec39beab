package elfsym

import (
	"bufio"
	"bytes"
	"debug/elf"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"sort"
	"strconv"
	"strings"
)

// LibDirs are the directories ResolveBinary searches for a library that
// neither the process's mappings nor the ld.so cache know: the host
// architecture's multiarch directories (Debian's), then the others'.
var LibDirs = libDirs(runtime.GOARCH)

// libDirs are the library directories of a GOARCH.
func libDirs(goarch string) []string {
	var multiarch []string
	switch goarch {
	case "amd64":
		multiarch = []string{"/lib/x86_64-linux-gnu", "/usr/lib/x86_64-linux-gnu"}
	case "arm64":
		multiarch = []string{"/lib/aarch64-linux-gnu", "/usr/lib/aarch64-linux-gnu"}
	}
	return append(multiarch, "/lib64", "/usr/lib64", "/lib", "/usr/lib")
}

// ResolveBinary turns a uprobe target as the user wrote it (a path, a
// program, or a library such as "libc", "libc.so.6") into an absolute path,
// preferring what process pid has mapped when pid > 0. Bare names are tried
// in pid's maps, $LD_LIBRARY_PATH, the ld.so cache and LibDirs (library-like
// names), $PATH, the working directory, then as "lib"+name.
func ResolveBinary(name string, pid int) (string, error) {
	if name == "" {
		return "", errors.New("elfsym: empty binary name")
	}
	if strings.ContainsRune(name, '/') {
		abs, err := filepath.Abs(name)
		if err != nil {
			return "", fmt.Errorf("elfsym: %w", err)
		}
		st, err := os.Stat(abs)
		if err != nil {
			return "", fmt.Errorf("elfsym: binary %s: %w", name, err)
		}
		if st.IsDir() {
			return "", fmt.Errorf("elfsym: binary %s is a directory", name)
		}
		return abs, nil
	}

	var tried []string
	if pid > 0 {
		p, err := fromMaps(name, pid)
		if err == nil {
			return p, nil
		}
		tried = append(tried, err.Error())
	}
	libLike := strings.HasPrefix(name, "lib") || strings.Contains(name, ".so")
	if libLike {
		p, searched, err := findLibrary(name)
		if err == nil {
			return p, nil
		}
		tried = append(tried, searched...)
	}
	if p, err := exec.LookPath(name); err == nil {
		if abs, err := filepath.Abs(p); err == nil {
			return abs, nil
		}
	}
	tried = append(tried, "$PATH")
	if st, err := os.Stat(name); err == nil && !st.IsDir() {
		return filepath.Abs(name)
	}
	tried = append(tried, "./"+name)
	if !libLike {
		p, searched, err := findLibrary("lib" + name)
		if err == nil {
			return p, nil
		}
		tried = append(tried, searched...)
	}
	return "", fmt.Errorf("elfsym: cannot find binary or library %q (searched %s)", name, strings.Join(tried, ", "))
}

// libMatch reports whether the file base name is the library name: an exact
// soname ("libc.so.6"), or "libNAME." / "libNAME-" for a short name ("libc"
// matches "libc.so.6" and "libc-2.31.so", not "libcrypt.so.1").
func libMatch(base, name string) bool {
	if base == name {
		return true
	}
	if strings.Contains(name, ".so") {
		return strings.HasPrefix(base, name+".")
	}
	return strings.HasPrefix(base, name+".") || strings.HasPrefix(base, name+"-")
}

// fromMaps finds name among the files mapped by pid: a mapped file whose
// base name is name, or the library name matches (see libMatch). The path is
// made reachable through /proc/PID/root when the process runs in another
// mount namespace.
func fromMaps(name string, pid int) (string, error) {
	mapsFile := "/proc/" + strconv.Itoa(pid) + "/maps"
	f, err := os.Open(mapsFile)
	if err != nil {
		return "", fmt.Errorf("%s (%v)", mapsFile, err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 0, 64*1024), 1<<20)
	var exact, lib string
	for sc.Scan() {
		p := mapsPath(sc.Text())
		if !strings.HasPrefix(p, "/") {
			continue
		}
		base := filepath.Base(p)
		if base == name && exact == "" {
			exact = p
		} else if lib == "" && strings.HasPrefix(name, "lib") && libMatch(base, name) {
			lib = p
		}
	}
	if err := sc.Err(); err != nil {
		return "", fmt.Errorf("%s (%v)", mapsFile, err)
	}
	p := exact
	if p == "" {
		p = lib
	}
	if p == "" {
		return "", errors.New(mapsFile)
	}
	if _, err := os.Stat(p); err == nil {
		return p, nil
	}
	root := "/proc/" + strconv.Itoa(pid) + "/root" + p
	if _, err := os.Stat(root); err == nil {
		return root, nil
	}
	return "", fmt.Errorf("%s (maps %s, which is gone)", mapsFile, p)
}

// MappedFiles returns the files process pid has mapped, each once, in the
// order of their first mapping, as paths this process can open: through
// /proc/PID/root when the file is not at its path here (pid runs in another
// mount namespace). Files deleted since they were mapped are left out.
func MappedFiles(pid int) ([]string, error) {
	mapsFile := "/proc/" + strconv.Itoa(pid) + "/maps"
	f, err := os.Open(mapsFile)
	if err != nil {
		return nil, fmt.Errorf("elfsym: %w", err)
	}
	defer f.Close()
	var files []string
	seen := map[string]bool{}
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 0, 64*1024), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		p := mapsPath(line)
		if !strings.HasPrefix(p, "/") || strings.HasSuffix(line, " (deleted)") || seen[p] {
			continue
		}
		seen[p] = true
		if _, err := os.Stat(p); err != nil {
			p = "/proc/" + strconv.Itoa(pid) + "/root" + p
		}
		files = append(files, p)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("elfsym: %s: %w", mapsFile, err)
	}
	return files, nil
}

// mapsPath returns the path field of a /proc/PID/maps line ("" if none),
// without a " (deleted)" mark.
func mapsPath(line string) string {
	// address perms offset dev inode path; the path may contain spaces.
	rest := line
	for range 5 {
		rest = strings.TrimLeft(rest, " ")
		i := strings.IndexByte(rest, ' ')
		if i < 0 {
			return ""
		}
		rest = rest[i:]
	}
	return strings.TrimSuffix(strings.TrimLeft(rest, " "), " (deleted)")
}

// findLibrary looks a library name up where the dynamic loader would:
// $LD_LIBRARY_PATH, the ld.so cache, then LibDirs. searched names what was
// tried, for the caller's error.
func findLibrary(name string) (path string, searched []string, err error) {
	if env := os.Getenv("LD_LIBRARY_PATH"); env != "" {
		for _, dir := range filepath.SplitList(env) {
			if dir == "" {
				continue
			}
			if p := fromDir(dir, name); p != "" {
				if rp, err := filepath.EvalSymlinks(p); err == nil {
					return rp, nil, nil
				}
			}
		}
		searched = append(searched, "$LD_LIBRARY_PATH")
	}
	if out, lerr := ldconfigP(); lerr == nil {
		if p := fromLdconfig(out, name, runtime.GOARCH); p != "" {
			if rp, err := filepath.EvalSymlinks(p); err == nil {
				return rp, nil, nil
			}
		}
		searched = append(searched, "ldconfig -p")
	} else {
		searched = append(searched, "ldconfig -p ("+lerr.Error()+")")
	}
	for _, dir := range LibDirs {
		if p := fromDir(dir, name); p != "" {
			if rp, err := filepath.EvalSymlinks(p); err == nil {
				return rp, nil, nil
			}
		}
	}
	searched = append(searched, LibDirs...)
	return "", searched, errors.New("not found")
}

// ldconfigP runs ldconfig -p, which prints the ld.so cache.
func ldconfigP() ([]byte, error) {
	bin, err := exec.LookPath("ldconfig")
	if err != nil {
		for _, p := range []string{"/sbin/ldconfig", "/usr/sbin/ldconfig"} {
			if _, serr := os.Stat(p); serr == nil {
				bin, err = p, nil
				break
			}
		}
	}
	if err != nil {
		return nil, err
	}
	return exec.Command(bin, "-p").Output()
}

// ldconfigFlags is the flag ldconfig -p shows on the libraries of a
// GOARCH (glibc's elf/cache.c): the cache of a multilib host also lists
// 32-bit ones (i386's, armhf's "hard-float"), which a probe of this
// host's architecture must not pick.
var ldconfigFlags = map[string]string{"amd64": "x86-64", "arm64": "AArch64"}

// fromLdconfig picks name's path from ldconfig -p output, whose lines read
// "\tlibc.so.6 (libc6,x86-64) => /lib/x86_64-linux-gnu/libc.so.6", or
// "(libc6,AArch64)" on arm64. On amd64 and arm64 only the entries of that
// architecture count.
func fromLdconfig(out []byte, name, goarch string) string {
	want := ldconfigFlags[goarch]
	for _, line := range bytes.Split(out, []byte("\n")) {
		key, target, ok := strings.Cut(strings.TrimSpace(string(line)), " => ")
		if !ok {
			continue
		}
		soname, flags, _ := strings.Cut(key, " ")
		if want != "" && !strings.Contains(flags, want) {
			continue
		}
		if libMatch(soname, name) {
			return strings.TrimSpace(target)
		}
	}
	return ""
}

// fromDir finds a shared object for name in dir: the first, by name, ELF
// file matching libMatch whose name has ".so" (linker scripts such as
// libc.so and static archives are skipped).
func fromDir(dir, name string) string {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return ""
	}
	var names []string
	for _, e := range ents {
		if n := e.Name(); libMatch(n, name) && strings.Contains(n, ".so") {
			names = append(names, n)
		}
	}
	sort.Strings(names)
	for _, n := range names {
		p := filepath.Join(dir, n)
		if isELF(p) {
			return p
		}
	}
	return ""
}

func isELF(path string) bool {
	f, err := OpenRegular(path, FollowLinks)
	if err != nil {
		return false
	}
	defer f.Close()
	var magic [4]byte
	if _, err := io.ReadFull(f, magic[:]); err != nil {
		return false
	}
	return string(magic[:]) == elf.ELFMAG
}
