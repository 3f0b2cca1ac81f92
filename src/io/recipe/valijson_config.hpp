#pragma once
// valijson as every translation unit of arun includes it. VALIJSON_USE_EXCEPTIONS changes
// valijson's inline functions (without it a bad schema calls abort()), so all the units that
// include valijson must agree on it: they include it through this header only.

#if defined(VALIJSON_USE_EXCEPTIONS) && !VALIJSON_USE_EXCEPTIONS
#error "arun includes valijson with VALIJSON_USE_EXCEPTIONS=1 (see recipe/valijson_config.hpp)"
#endif
#ifndef VALIJSON_USE_EXCEPTIONS
#define VALIJSON_USE_EXCEPTIONS 1
#endif

#include <valijson/adapters/boost_json_adapter.hpp>
#include <valijson/schema.hpp>
#include <valijson/schema_parser.hpp>
#include <valijson/validation_results.hpp>
#include <valijson/validator.hpp>
