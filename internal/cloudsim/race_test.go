//go:build race

package cloudsim

// The race detector makes code 2-20 times slower (Go's race detector
// documentation); the time budgets of the tests grow to match.
const raceSlowdown = 10
