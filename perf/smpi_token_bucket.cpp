// A token bucket (Linux tc tbf) on SimGrid links: a prototype for issue 21, built and loaded
// into smpirun with LD_PRELOAD as perf/README.md and the results file it names show. Not yet
// part of `hpceval simulate`.
//
// HPCEVAL_SMPI_BUCKET="RATE:BURST:PEAK:SUFFIX[,SUFFIX...]" (bytes/s, bytes, bytes/s): every
// link whose name ends with a SUFFIX gets a bucket of BURST bytes filled at RATE. While it
// holds tokens the link runs at PEAK (the veth's own speed); once a flow has emptied it, at
// RATE, until one frame's worth has come back. That is why the emulated cluster's PingPong
// shows twice the line rate up to the bucket's size: each direction refills while the other
// one's message is on the way.
//
// Tokens are integrated from the link's usage over every interval the simulation clock
// advances (Engine::on_time_advance, which fires before the actions of the interval just
// ended are updated, so the usage read there is that interval's; checked by the PingPong only).
// A daemon actor wakes when the busiest link's bucket would run dry at its current usage
// (at most every 5 us, so a flow that starts meanwhile is seen within that step) and switches
// the link's bandwidth. SimGrid 3.32's set_bandwidth() drives penalties negative with the
// SMPI model's RTT weighting, so runs need --cfg=network/weight-S:0.
#include <simgrid/s4u.hpp>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

namespace sg4 = simgrid::s4u;

namespace {
struct Bucket {
  sg4::Link* link;
  double tokens;
  bool at_peak;
};

double rate_Bps = 0, burst_B = 0, peak_Bps = 0;
constexpr double kMaxStep = 5e-6;  // s: the longest a started flow goes unseen
constexpr double kFrame = 1514.0;  // tbf sends a packet when the bucket holds it
std::vector<Bucket> buckets;

void integrate(double elapsed) {
  for (auto& b : buckets)
    b.tokens = std::clamp(b.tokens + (rate_Bps - b.link->get_usage()) * elapsed, 0.0, burst_B);
}

double switch_and_plan() {
  double next = kMaxStep;
  for (auto& b : buckets) {
    if (b.at_peak && b.tokens <= 1.0) {
      b.link->set_bandwidth(rate_Bps);
      b.at_peak = false;
    } else if (!b.at_peak && b.tokens >= kFrame) {
      b.link->set_bandwidth(peak_Bps);
      b.at_peak = true;
    }
    double used = b.link->get_usage();
    if (b.at_peak && used > rate_Bps)
      next = std::min(next, b.tokens / (used - rate_Bps));
  }
  return std::max(next, 1e-9);
}

bool ends_with(const std::string& name, const std::string& suffix) {
  return name.size() >= suffix.size() &&
         name.compare(name.size() - suffix.size(), suffix.size(), suffix) == 0;
}

std::vector<std::string> split(const std::string& list) {
  std::vector<std::string> out;
  size_t start = 0;
  while (start <= list.size()) {
    size_t comma = list.find(',', start);
    if (comma == std::string::npos)
      comma = list.size();
    if (comma > start)
      out.push_back(list.substr(start, comma - start));
    start = comma + 1;
  }
  return out;
}
}  // namespace

__attribute__((constructor)) static void token_bucket_init() {
  const char* spec = std::getenv("HPCEVAL_SMPI_BUCKET");
  if (spec == nullptr)
    return;
  char suffixes[512] = "";
  if (std::sscanf(spec, "%lf:%lf:%lf:%511s", &rate_Bps, &burst_B, &peak_Bps, suffixes) != 4 ||
      rate_Bps <= 0 || burst_B <= 0 || peak_Bps < rate_Bps) {
    std::fprintf(stderr, "token bucket: HPCEVAL_SMPI_BUCKET=%s is not RATE:BURST:PEAK:SUFFIXES\n",
                 spec);
    std::exit(2);
  }
  std::vector<std::string> wanted = split(suffixes);
  sg4::Engine::on_platform_created_cb([wanted]() {
    auto* engine = sg4::Engine::get_instance();
    for (auto* link : engine->get_all_links())
      for (const auto& suffix : wanted)
        if (ends_with(link->get_name(), suffix)) {
          link->set_bandwidth(peak_Bps);
          buckets.push_back({link, burst_B, true});
          break;
        }
    std::fprintf(stderr, "token bucket: %zu links, %.6g B/s, %.6g B, peak %.6g B/s\n",
                 buckets.size(), rate_Bps, burst_B, peak_Bps);
    sg4::Engine::on_time_advance_cb(integrate);
    sg4::Actor::create("hpceval-token-bucket", engine->get_all_hosts().front(), [] {
      while (true)
        sg4::this_actor::sleep_for(switch_and_plan());
    })->daemonize();
  });
}
