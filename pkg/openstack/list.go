package openstack

import (
	"context"

	"github.com/gophercloud/gophercloud/v2/pagination"
)

// listAll reads every page of a listing as one operation of service:
// pager starts the listing afresh on each attempt, extract turns the pages
// into items.
func listAll[T any](ctx context.Context, c *Caller, service, op string, pager func() pagination.Pager, extract func(pagination.Page) ([]T, error)) ([]T, error) {
	var out []T
	err := c.Do(ctx, service, op, func(ctx context.Context) error {
		pages, err := pager().AllPages(ctx)
		if err != nil {
			return err
		}
		out, err = extract(pages)
		return err
	})
	return out, err
}

// into adapts gophercloud's ExtractXInto functions to listAll.
func into[T any](extract func(pagination.Page, any) error) func(pagination.Page) ([]T, error) {
	return func(p pagination.Page) ([]T, error) {
		var out []T
		err := extract(p, &out)
		return out, err
	}
}
