// Output that cannot drive the terminal. Job names, commands, reasons, log tails and server
// messages come from other users: a job named "\x1b[2J" would clear an admin's screen, and
// other escape sequences can rewrite what was printed, set the window title or, on some
// terminals, answer back. The client verbs print through a filter that replaces every C0
// control character but tab and newline, DEL, and every C1 control (U+0080..U+009F, in UTF-8)
// with '?'. JSON output escapes them itself, so it passes unchanged.
#pragma once

#include <ostream>
#include <streambuf>
#include <string>
#include <string_view>

namespace gpupool::cli {

// `s` as the filter prints it.
std::string StripControls(std::string_view s);

// A streambuf that writes through `out`, filtered.
class ControlFilter : public std::streambuf {
 public:
  explicit ControlFilter(std::streambuf* out) : out_(out) {}
  ~ControlFilter() override { Finish(); }
  void Finish();  // writes a held 0xC2 that no C1 byte followed

 protected:
  int overflow(int c) override;
  std::streamsize xsputn(const char* s, std::streamsize n) override;
  int sync() override;

 private:
  void Filter(std::string_view in, std::string& out);
  std::streambuf* out_;
  bool held_c2_ = false;  // the last byte was 0xC2: a C1 control may follow
};

// While alive, std::cout and std::cerr print through filters.
class SafeTerminalOutput {
 public:
  SafeTerminalOutput();
  ~SafeTerminalOutput();
  SafeTerminalOutput(const SafeTerminalOutput&) = delete;
  SafeTerminalOutput& operator=(const SafeTerminalOutput&) = delete;

 private:
  std::streambuf* cout_;
  std::streambuf* cerr_;
  ControlFilter out_, err_;
};

}  // namespace gpupool::cli
