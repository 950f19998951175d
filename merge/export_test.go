package merge

// SetAfterStep makes WriteTo call f after each of its steps ("planned", "placed DST",
// "removed DST", "manifest"); an error from f stops WriteTo there, as a crash would.
func SetAfterStep(f func(step string) error) (restore func()) {
	prev := afterStep
	afterStep = f
	return func() { afterStep = prev }
}
