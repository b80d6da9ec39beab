// Command genseeds rewrites the committed seed corpora of format's
// FuzzOpen and FuzzRepair, testdata/fuzz/Fuzz{Open,Repair}/seed-*, from
// format.FuzzSeeds. It is run by `go generate ./format/`, in format's
// directory.
package main

import (
	"fmt"
	"log"
	"os"
	"path/filepath"

	"github.com/bpftape/bpftape/format"
)

func main() {
	log.SetFlags(0)
	log.SetPrefix("genseeds: ")
	scratch, err := os.MkdirTemp("", "bpftape-seeds-")
	if err != nil {
		log.Fatal(err)
	}
	seeds, err := format.FuzzSeeds(scratch)
	os.RemoveAll(scratch)
	if err != nil {
		log.Fatal(err)
	}
	for _, target := range []string{"FuzzOpen", "FuzzRepair"} {
		dir := filepath.Join("testdata", "fuzz", target)
		if err := os.MkdirAll(dir, 0o755); err != nil {
			log.Fatal(err)
		}
		for name, data := range seeds {
			body := fmt.Sprintf("go test fuzz v1\n[]byte(%q)\n", data)
			if err := os.WriteFile(filepath.Join(dir, "seed-"+name), []byte(body), 0o644); err != nil {
				log.Fatal(err)
			}
		}
	}
}
