// A Zarr store in an S3 bucket (or any S3-compatible service): s3://bucket/prefix.
// Reads are SigV4-signed ranged GETs and HEADs (anonymous when there are no credentials);
// list_dir is ListObjectsV2 with delimiter "/" over every page.
#pragma once

#include <memory>
#include <string>

#include "cubestream/store.hpp"
#include "store/http/transport.hpp"
#include "store/s3/s3_config.hpp"

namespace cubestream::s3 {

// `url` is s3://bucket or s3://bucket/prefix. A null transport means libcurl's.
std::shared_ptr<Store> open_s3_store(const std::string& url, const Config& config, const http::Settings& settings,
                                     std::shared_ptr<http::Transport> transport = nullptr);

}  // namespace cubestream::s3
