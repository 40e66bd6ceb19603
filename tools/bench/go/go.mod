module corokit/bench

go 1.19
