package transform

import "context"

// WorkerLimits starts a worker and answers what it said of its limits.
func WorkerLimits(ctx context.Context) (string, error) {
	w, err := startWorker(ctx)
	if err != nil {
		return "", err
	}
	defer w.kill()
	return w.limits, nil
}

// RunRaw runs one request on a fresh worker and answers its stderr.
func RunRaw(ctx context.Context, src string, in Input) (Result, error, string) {
	w, err := startWorker(ctx)
	if err != nil {
		return Result{}, err, ""
	}
	defer w.kill()
	res, err, _ := w.do(ctx, request{src: src, budget: 50e6, in: in}.encode(), 50e6)
	return res, err, w.stderr.String()
}
