package gen

// GroupCandSlots is where a row's candidate slots lie in its workspace
// (Config.Groups), for the tests that check a launch leaves them empty.
func GroupCandSlots(cfg Config) (off, bytes int) {
	w := groupLayout(cfg)
	return w.cands, 8 * cfg.MaxCandidates
}
