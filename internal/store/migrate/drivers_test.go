package migrate

import (
	"os"
	"slices"
	"testing"
)

// A version is one change of the schema in every driver: the two drivers'
// files have the same numbers and names, so a database's history reads the
// same whichever driver wrote it.
func TestDrivers_NumberTheSameChangesTheSame(t *testing.T) {
	names := func(driver string) []string {
		fsys := os.DirFS("..")
		ms, err := Load(fsys, driver+"/migrations")
		if err != nil {
			t.Fatalf("%s: %v", driver, err)
		}
		var out []string
		for _, m := range ms {
			out = append(out, m.Name)
		}
		return out
	}
	pg, lite := names("postgres"), names("sqlite")
	if !slices.Equal(pg, lite) {
		t.Fatalf("postgres migrations %v, sqlite %v: want the same steps under the same numbers", pg, lite)
	}
}
