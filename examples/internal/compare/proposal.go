package compare

import (
	"flag"
	"fmt"

	"github.com/pbsgmcmc/pbsgmcmc/models"
	"github.com/pbsgmcmc/pbsgmcmc/pf"
	"github.com/pbsgmcmc/pbsgmcmc/ssm"
)

// ProposalFlag is the -proposal flag of the commands that fit models by
// particle filters: auto keeps each model's default filter (the paper's
// bootstrap filter for the SVM, the locally optimal proposal for GARCH and
// the LGSSM), guided also gives the SVM its Laplace proposal
// (models.SVM{Guided: true}), and bootstrap uses the transition for every
// model.
type ProposalFlag struct{ name string }

// Register defines -proposal on fs with the default def (auto, guided or
// bootstrap).
func (p *ProposalFlag) Register(fs *flag.FlagSet, def string) {
	fs.StringVar(&p.name, "proposal", def, "particle proposal: auto (the paper's: bootstrap for svm, locally optimal for lgssm and garch), guided (also svm's Laplace proposal) or bootstrap (the transition for every model)")
}

// String returns the flag's value.
func (p *ProposalFlag) String() string { return p.name }

// Check validates the flag's value.
func (p *ProposalFlag) Check() error {
	switch p.name {
	case "", "auto", "guided", "bootstrap":
		return nil
	}
	return fmt.Errorf("unknown proposal %q (want auto, guided or bootstrap)", p.name)
}

// Apply returns the model to use and the filter's proposal setting.
func (p *ProposalFlag) Apply(m ssm.Model) (ssm.Model, pf.Proposal) {
	switch p.name {
	case "bootstrap":
		return m, pf.Bootstrap
	case "guided":
		if s, ok := m.(models.SVM); ok {
			s.Guided = true
			return s, pf.Auto
		}
	}
	return m, pf.Auto
}
