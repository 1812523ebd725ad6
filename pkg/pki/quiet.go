package pki

import (
	"sync"

	cflog "github.com/cloudflare/cfssl/log"
)

// quietCFSSL silences cfssl's own logger below errors. It writes
// unstructured lines ("[INFO] signed certificate with serial number ...")
// to stderr for every key and certificate; our callers log what matters
// with klog. cfssl keeps the level in a package variable, so it is set
// once, before the first use.
var quietCFSSL = sync.OnceFunc(func() { cflog.Level = cflog.LevelError })
