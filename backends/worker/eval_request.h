#pragma once

#include "tensors.h"

#include "core/eval_request.h"

/// The `eval` request is hone_proto's type (core/eval_request.h): the worker reads it with
/// `EvalRequest::fromJson`, which validates every field before anything is compiled.
namespace hone::backends {

using core::protocol::EvalRequest;
using core::protocol::ShapeSpec;
using core::protocol::SourceSpec;
using core::protocol::requestId;

} // namespace hone::backends
