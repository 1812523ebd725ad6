// Package docscheck holds the tests that keep Stackward's documentation
// true to what it describes: the chart README's values table to
// values.yaml and values.schema.json, the structured cloud.conf schema to
// the cloud.conf parser, the annotation table of
// docs/reference/load-balancers.md and the [LoadBalancer] key table of
// docs/reference/cloud-conf.md to the code, every --flag and chart value
// the READMEs and docs/ name to the flags our binaries have and the values
// the chart has, and every relative link of the README, docs/ and the
// guides to a file and heading that exist, with every page of docs/ linked
// from the README. A table is written by hand (its prose is the point) and
// compared, so drift fails `make unit` instead of reaching a user.
package docscheck
