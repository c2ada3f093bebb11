// Package paper is the driver of the paper-protocol commands (lgssm_ksd,
// lgssmd, synthetic, realdata). A command states its flags and its
// experiments as data; the driver parses the shared flags, runs package
// compare on every experiment (the paper's gradient estimators on one
// model and data set, equal compute time, step size chosen by the kernel
// Stein discrepancy) and writes the report, the JSON results and the plots.
//
// # Flags
//
// Flags are the flags of every command: compare.CommonFlags, plus -proposal
// and -models where the Command asks for them. A command defines its own
// flags on the flag set Flags.Define returns, calls Flags.Parse and then
// checks its own values.
//
// # Experiments
//
// An Experiment holds the model (its proposal applied), the training data,
// the methods (Estimators.Method builds them from the Gradient kinds of the
// paper's tables: Full, Weekly, No Buffer, Buffer; Estimators.Filtered one
// per filter, particle or exact), the starting point, the
// data-generating parameters of synthetic data, the KSD's reference score
// and the paper's table with the headings of the report. Run runs them in
// order: the k-th (from 0) uses seed Seed + k·2²⁰ for the comparison and
// PCG stream (Seed, 1000 + k) for the chains' starting jitter (N(0, 0.1²)
// on each unconstrained coordinate).
//
// An Experiment's Reduce, when set, replaces the comparison's result
// before anything is reported (lgssmd: KSD and MSE by parameter group
// instead of by coordinate).
//
// For every experiment Run writes, to stdout, the heading
// "=== Title (seconds s)Note ===" and compare.WriteReport's tables, then the
// Extra's text if any; to Out, results_<Name>.json (the Extra's JSON if
// any, else the comparison's summary) and one PNG per parameter:
// mse_<Name>_<param>.png (compare.PlotMSE) for synthetic data (Truth set),
// trace_<Name>_<param>.png (compare.PlotTrace) otherwise.
package paper
