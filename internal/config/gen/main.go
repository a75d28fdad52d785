// Command gen prints docs/configuration.md, every STREAMING_HUB_ variable
// the hub reads with its default and a description, from internal/config:
//
//	go run ./internal/config/gen > docs/configuration.md
package main

import (
	"fmt"

	"github.com/lerianstudio/streaming-hub/internal/config"
)

func main() { fmt.Print(config.Markdown()) }
