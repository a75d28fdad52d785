package testkit

// HostileTransforms are the programs every test of transform limits tries
// (docs/security.md, "Transformations"), each past its limits in its own
// way: one builtin call asking for gigabytes at once, a sparse array index,
// a stream collected, an endless one limited late, a regular expression
// that never returns on a long string, a recursion that doubles.
var HostileTransforms = []string{
	`"x" * 2000000000 | length`,
	`[] | .[300000000] = 1`,
	`[range(1e8)]`,
	`[limit(1e9; repeat(1))]`,
	`"a" * 20000000 | test("(a|a)*b")`,
	`def f: [f, f]; f`,
}
