// Command hookverify verifies incoming webhook deliveries for edge services. See README.md.
package main

import (
	"os"

	"github.com/hookverify/hookverify/internal/cli"
)

func main() {
	os.Exit(cli.Main(os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
}
