package storage

import (
	"fmt"
	"slices"
	"testing"
)

func TestByEndpoint(t *testing.T) {
	scopes := []string{"s"}
	many := make([]string, MaxEndpointPicks+1)
	for i := range many {
		many[i] = fmt.Sprint("ep-", i)
	}
	for _, c := range []struct {
		name   string
		filter InboxFilter
		want   []InboxFilter
	}{
		{"no endpoint stays whole", InboxFilter{Scopes: scopes}, []InboxFilter{{Scopes: scopes}}},
		{"one endpoint", InboxFilter{EndpointIDs: []string{"a"}, Scopes: scopes},
			[]InboxFilter{{EndpointIDs: []string{"a"}, Scopes: scopes}}},
		{"each endpoint once, in order, with the scopes", InboxFilter{EndpointIDs: []string{"b", "a", "b"}, Scopes: scopes},
			[]InboxFilter{{EndpointIDs: []string{"b"}, Scopes: scopes}, {EndpointIDs: []string{"a"}, Scopes: scopes}}},
		{"too many endpoints stay whole", InboxFilter{EndpointIDs: many}, []InboxFilter{{EndpointIDs: many}}},
	} {
		got := c.filter.ByEndpoint()
		if !slices.EqualFunc(got, c.want, func(a, b InboxFilter) bool {
			return slices.Equal(a.EndpointIDs, b.EndpointIDs) && slices.Equal(a.Scopes, b.Scopes)
		}) {
			t.Errorf("%s: ByEndpoint() = %v, want %v", c.name, got, c.want)
		}
	}
}
