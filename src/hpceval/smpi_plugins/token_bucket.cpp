// A token bucket (Linux tc tbf) on the node links of a SimGrid platform, for `hpceval
// simulate` of an emulated cluster whose links tc tbf shapes (hpceval.simulate.token_bucket
// builds it with g++ against libsimgrid and smpirun loads it with LD_PRELOAD).
//
// HPCEVAL_SMPI_BUCKET="RATE:BURST:SUFFIX[,SUFFIX...]" (payload bytes/s, payload bytes): every
// link whose name ends with a SUFFIX gets a bucket of BURST bytes filled at RATE. While it
// holds tokens the link runs at the bandwidth the platform file gives it (the veth's own
// speed); once a flow has emptied it, at RATE, until one frame's worth has come back. That
// is why the emulated cluster's PingPong shows twice the line rate up to twice the bucket:
// each direction refills while the other one's message is on the way.
//
// Tokens are integrated from the link's usage over every interval the simulation clock
// advances (Engine::on_time_advance fires before the actions of the interval just ended are
// updated, so the usage read there is that interval's). A daemon actor wakes when the
// busiest link's bucket would run dry at its current usage (at most every 5 us, so a flow
// that starts meanwhile is seen within that step) and switches the link's bandwidth.
// SimGrid 3.32's set_bandwidth() drives penalties negative with the SMPI model's RTT
// weighting, so runs need --cfg=network/weight-S:0 (the smpirun starter sets it).
#include <simgrid/s4u.hpp>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

namespace sg4 = simgrid::s4u;

namespace {
struct Bucket {
  sg4::Link* link;
  double peak_Bps;  // the link's bandwidth in the platform file
  double tokens;
  bool at_peak;
};

double rate_Bps = 0;
double burst_B = 0;
constexpr double kMaxStep = 5e-6;  // s: the longest a started flow goes unseen
constexpr double kFrame = 1514.0;  // tbf sends a packet once the bucket holds it
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
    } else if (!b.at_peak && b.tokens >= std::min(kFrame, burst_B)) {
      b.link->set_bandwidth(b.peak_Bps);
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

[[noreturn]] void refuse(const char* why, const char* spec) {
  std::fprintf(stderr, "token bucket: HPCEVAL_SMPI_BUCKET=%s: %s\n", spec, why);
  std::exit(2);
}
}  // namespace

__attribute__((constructor)) static void token_bucket_init() {
  const char* spec = std::getenv("HPCEVAL_SMPI_BUCKET");
  // smpirun is a shell script: LD_PRELOAD reaches it and the tools it runs too, and only the
  // simulator (smpimain) has a platform to shape.
  if (spec == nullptr || std::strcmp(program_invocation_short_name, "smpimain") != 0)
    return;
  char suffixes[512] = "";
  if (std::sscanf(spec, "%lf:%lf:%511s", &rate_Bps, &burst_B, suffixes) != 3)
    refuse("not RATE:BURST:SUFFIX[,SUFFIX...]", spec);
  if (!(rate_Bps > 0) || !(burst_B > 0))
    refuse("the rate and the bucket must be positive", spec);
  std::vector<std::string> wanted = split(suffixes);
  std::string copy = spec;
  sg4::Engine::on_platform_created_cb([wanted, copy]() {
    auto* engine = sg4::Engine::get_instance();
    for (auto* link : engine->get_all_links())
      for (const auto& suffix : wanted)
        if (ends_with(link->get_name(), suffix)) {
          if (link->get_bandwidth() < rate_Bps)
            refuse(("link " + link->get_name() + " is slower than the bucket's rate").c_str(),
                   copy.c_str());
          buckets.push_back({link, link->get_bandwidth(), burst_B, true});
          break;
        }
    if (buckets.empty())
      refuse("no link of the platform ends with one of the suffixes", copy.c_str());
    std::fprintf(stderr, "token bucket: %zu links, %.6g B/s, %.6g B\n", buckets.size(), rate_Bps,
                 burst_B);
    sg4::Engine::on_time_advance_cb(integrate);
    sg4::Actor::create("hpceval-token-bucket", engine->get_all_hosts().front(), [] {
      while (true)
        sg4::this_actor::sleep_for(switch_and_plan());
    })->daemonize();
  });
}
