package lifecycle

import (
	"context"

	"github.com/qualkit/qualkit/schemas/contract"
)

// Start launches r's server and brings it into service: Launch, then readiness (WaitReady), then
// listener ownership (CheckListener). It is the one start sequence: a campaign and `qualrun
// serve` both start their server with it, and both end it with Shutdown (stop, residue, record).
//
// A nil *Server means nothing was launched; err says why (ErrPortTaken, ErrIsolation, ErrRecipe,
// ...). A *Server with an error did not come into service: the failure is in its record, unless
// ctx ended first (the caller then records the interruption in its own words). Either way the
// caller owns the server and must call Shutdown. launched, when not nil, is called once the
// process group exists, before readiness (a campaign names its phase there).
func Start(ctx context.Context, r *contract.LaunchRecipeDoc, opts Options, launched func(*Server)) (*Server, error) {
	srv, err := Launch(ctx, r, opts)
	if srv == nil {
		return nil, err
	}
	if launched != nil {
		launched(srv)
	}
	if err == nil {
		err = srv.WaitReady(ctx)
	}
	if err == nil {
		err = srv.CheckListener()
	}
	if err != nil && ctx.Err() == nil {
		srv.Fail(err)
	}
	return srv, err
}
