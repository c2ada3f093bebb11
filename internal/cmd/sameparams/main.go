// Command sameparams compares the "params" of two JSON reports of
// examples/fit -json and exits with status 1 when they differ in any
// field (names, means, sds, quantiles, ESS, R-hat, MCSE), 2 when a file
// cannot be read. scripts/samedraws.sh runs it.
//
// Usage: go run ./internal/cmd/sameparams A.json B.json
package main

import (
	"encoding/json"
	"fmt"
	"os"
	"reflect"
	"sort"
)

type report struct {
	Params []map[string]any `json:"params"`
}

func read(name string) (report, error) {
	var r report
	b, err := os.ReadFile(name)
	if err != nil {
		return r, err
	}
	if err := json.Unmarshal(b, &r); err != nil {
		return r, fmt.Errorf("%s: %v", name, err)
	}
	if len(r.Params) == 0 {
		return r, fmt.Errorf("%s: no params", name)
	}
	return r, nil
}

func main() {
	if len(os.Args) != 3 {
		fmt.Fprintln(os.Stderr, "usage: sameparams A.json B.json")
		os.Exit(2)
	}
	a, err := read(os.Args[1])
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	b, err := read(os.Args[2])
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	diff := 0
	if len(a.Params) != len(b.Params) {
		fmt.Printf("%d params against %d\n", len(a.Params), len(b.Params))
		os.Exit(1)
	}
	for i := range a.Params {
		keys := make([]string, 0, len(a.Params[i]))
		for k := range a.Params[i] {
			keys = append(keys, k)
		}
		for k := range b.Params[i] {
			if _, ok := a.Params[i][k]; !ok {
				keys = append(keys, k)
			}
		}
		sort.Strings(keys)
		for _, k := range keys {
			va, vb := a.Params[i][k], b.Params[i][k]
			if !reflect.DeepEqual(va, vb) {
				fmt.Printf("param %d (%v) %s: %v against %v\n", i, a.Params[i]["name"], k, va, vb)
				diff++
			}
		}
	}
	if diff > 0 {
		os.Exit(1)
	}
}
