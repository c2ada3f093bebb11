package main

import (
	"encoding/csv"
	"fmt"
	"io"
	"os"
	"slices"
	"strconv"
	"strings"

	"gonum.org/v1/gonum/mat"
)

// drawsProposal returns the centre and covariance in u of the draws in a
// CSV file whose header names the model's parameters (natural
// coordinates; other columns, such as a fit's chain, iter and time, are
// ignored): their mean and covariance, for the t₅ of the final importance
// sample (at 1.3² × it, as after an adaptation round). Importance weights
// correct whatever proposal is used, so the draws only need to cover the
// posterior (a pilot run's, any sampler's); the estimate stays the grid
// likelihood's and the prior's alone.
func drawsProposal(m paramModel, path string) ([]float64, *mat.SymDense, error) {
	us, err := readDraws(m, path)
	if err != nil {
		return nil, nil, err
	}
	d := len(m.ParamNames())
	if len(us) < 10*d {
		return nil, nil, fmt.Errorf("-proposal %s: %d draws, want at least %d", path, len(us), 10*d)
	}
	mean := make([]float64, d)
	for _, u := range us {
		for i, v := range u {
			mean[i] += v / float64(len(us))
		}
	}
	cov := mat.NewSymDense(d, nil)
	for i := range d {
		for j := i; j < d; j++ {
			s := 0.0
			for _, u := range us {
				s += (u[i] - mean[i]) * (u[j] - mean[j])
			}
			cov.SetSym(i, j, s/float64(len(us)-1))
		}
	}
	var ch mat.Cholesky
	if !ch.Factorize(cov) {
		return nil, nil, fmt.Errorf("-proposal %s: the covariance of its %d draws in u is not positive definite", path, len(us))
	}
	return mean, cov, nil
}

// readDraws returns the draws of a CSV file whose header names the
// model's parameters (natural coordinates), each mapped to u.
func readDraws(m paramModel, path string) ([][]float64, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("-proposal: %w", err)
	}
	defer f.Close()
	r := csv.NewReader(f)
	r.FieldsPerRecord = -1
	head, err := r.Read()
	if err != nil {
		return nil, fmt.Errorf("-proposal %s: header: %w", path, err)
	}
	names := m.ParamNames()
	d := len(names)
	col := make([]int, d)
	for i, name := range names {
		if col[i] = slices.Index(head, name); col[i] < 0 {
			return nil, fmt.Errorf("-proposal %s: no column %q in the header %q (want the natural parameters %s)", path, name, strings.Join(head, ","), strings.Join(names, ", "))
		}
	}
	var us [][]float64
	th := make([]float64, d)
	for line := 2; ; line++ {
		rec, err := r.Read()
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("-proposal %s: %w", path, err)
		}
		for i, c := range col {
			if c >= len(rec) {
				return nil, fmt.Errorf("-proposal %s line %d: %d fields, want column %d (%s)", path, line, len(rec), c+1, names[i])
			}
			if th[i], err = strconv.ParseFloat(strings.TrimSpace(rec[c]), 64); err != nil {
				return nil, fmt.Errorf("-proposal %s line %d: %s: %v", path, line, names[i], err)
			}
		}
		u := make([]float64, d)
		if err := m.Unconstrain(u, th); err != nil {
			return nil, fmt.Errorf("-proposal %s line %d: %v", path, line, err)
		}
		us = append(us, u)
	}
	return us, nil
}
