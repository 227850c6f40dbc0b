package cli

import (
	"sort"
	"time"

	"google.golang.org/protobuf/types/known/timestamppb"
)

func sortedStrings(s []string) []string {
	sort.Strings(s)
	return s
}

func parseOptionalTime(flagName, value string) (*timestamppb.Timestamp, error) {
	if value == "" {
		return nil, nil
	}
	t, err := time.Parse(time.RFC3339, value)
	if err != nil {
		return nil, usagef("%s: want an RFC 3339 time such as 2026-12-31T23:59:00Z: %v", flagName, err)
	}
	return timestamppb.New(t), nil
}
