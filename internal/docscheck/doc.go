// Package docscheck holds the tests that keep Stackward's documentation
// tables true to what they describe: the chart README's values table to
// values.yaml and values.schema.json, the structured cloud.conf schema to
// the cloud.conf parser, and the top-level README's annotation and
// [LoadBalancer] key tables to the code, and every --flag the READMEs name
// to the flags our binaries have. A table is written by hand (its
// prose is the point) and compared, so drift fails `make unit` instead of
// reaching a user.
package docscheck
