// SPDX-License-Identifier: MIT
module corokit/bench

go 1.19
