package report

import (
	"gonum.org/v1/plot"
	"gonum.org/v1/plot/vg"
)

// SavePanels draws plots[r][c] as the panel in row r and column c of one
// width × height canvas and writes it to path as PNG, creating the directory
// if needed.
func SavePanels(path string, plots [][]*plot.Plot, width, height vg.Length) error {
	return savePanels(path, plots, width, height)
}
