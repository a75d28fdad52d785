package main

import (
	"os"
	"regexp"
	"strings"
	"testing"
)

// TestDocumentedServerDefault_IsTheCodes: the CLI's --help, docs/cli.md
// and the configuration page name one default hub URL, the code's
// (docs/configuration.md, docs/cli.md).
func TestDocumentedServerDefault_IsTheCodes(t *testing.T) {
	_, out, errOut := runCmd(nil, "subscriptions", "list", "--help")
	if help := out + errOut; !strings.Contains(help, "else "+defaultServer+")") {
		t.Errorf("subscriptions list --help does not name %s as the default server:\n%s", defaultServer, help)
	}
	page, err := os.ReadFile("../../docs/configuration.md")
	if err != nil {
		t.Fatal(err)
	}
	row := regexp.MustCompile("(?m)^\\| `STREAMING_HUB_SERVER` \\| `([^`]*)` \\|").FindSubmatch(page)
	if row == nil || string(row[1]) != defaultServer {
		t.Errorf("docs/configuration.md's STREAMING_HUB_SERVER default is %q, the code's %q", row, defaultServer)
	}
	cli, err := os.ReadFile("../../docs/cli.md")
	if err != nil {
		t.Fatal(err)
	}
	url := regexp.MustCompile(`http://[^\s` + "`" + `),]+`)
	for _, line := range strings.Split(string(cli), "\n") {
		if !strings.Contains(strings.ToLower(line), "default") && !strings.Contains(line, "for the URL only") {
			continue
		}
		for _, u := range url.FindAllString(line, -1) {
			if u != defaultServer {
				t.Errorf("docs/cli.md gives %s as the default where the code's is %s: %s", u, defaultServer, line)
			}
		}
	}
}
