package nodeboot

import "errors"

var (
	// ErrSourceUnavailable means a metadata source does not exist on this
	// machine or did not answer (no config drive, metadata service
	// unreachable after every attempt, 404). Another source may still work.
	ErrSourceUnavailable = errors.New("metadata source unavailable")
	// ErrInvalidMetadata means a source answered but what it said is missing
	// a required field or cannot be decoded. Never retried, never guessed
	// around.
	ErrInvalidMetadata = errors.New("invalid metadata")
	// ErrInconsistent means two sources disagree about this instance.
	ErrInconsistent = errors.New("inconsistent metadata")
	// ErrNoAddress means no address of the requested family could be chosen.
	ErrNoAddress = errors.New("no usable node address")
)
