// Command gendocs writes the generated pages under docs/: flags-and-config.md, from the flag and
// KubeletConfiguration field lists in internal/config. Run it from the repository root after
// changing a flag or a field's handling; a test in internal/config fails until it is run.
package main

import (
	"bytes"
	"log"
	"os"

	"github.com/nodelet/nodelet/internal/config"
)

func main() {
	var buf bytes.Buffer
	if err := config.WriteReference(&buf); err != nil {
		log.Fatal(err)
	}
	if err := os.WriteFile("docs/flags-and-config.md", buf.Bytes(), 0o644); err != nil {
		log.Fatal(err)
	}
}
