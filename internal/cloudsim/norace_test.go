//go:build !race

package cloudsim

// raceSlowdown scales the tests' time budgets: 1 without the race detector.
const raceSlowdown = 1
