#include "cli/terminal.h"

#include <iostream>
#include <sstream>

namespace gpupool::cli {

void ControlFilter::Filter(std::string_view in, std::string& out) {
  for (const char ch : in) {
    const unsigned char b = static_cast<unsigned char>(ch);
    if (held_c2_) {
      held_c2_ = false;
      if (b >= 0x80 && b <= 0x9F) {  // U+0080..U+009F: a C1 control
        out += '?';
        continue;
      }
      out += '\xC2';
    }
    if (b == 0xC2) {
      held_c2_ = true;
    } else if ((b < 0x20 && b != '\n' && b != '\t') || b == 0x7F) {
      out += '?';
    } else {
      out += ch;
    }
  }
}

int ControlFilter::overflow(int c) {
  if (c == traits_type::eof()) return traits_type::not_eof(c);
  const char ch = traits_type::to_char_type(c);
  return xsputn(&ch, 1) == 1 ? c : traits_type::eof();
}

std::streamsize ControlFilter::xsputn(const char* s, std::streamsize n) {
  std::string filtered;
  filtered.reserve(static_cast<size_t>(n));
  Filter(std::string_view(s, static_cast<size_t>(n)), filtered);
  const auto size = static_cast<std::streamsize>(filtered.size());
  return out_->sputn(filtered.data(), size) == size ? n : 0;
}

void ControlFilter::Finish() {
  if (held_c2_) {
    held_c2_ = false;
    out_->sputc('\xC2');
  }
}

int ControlFilter::sync() { return out_->pubsync(); }

std::string StripControls(std::string_view s) {
  std::stringbuf sink;
  {
    ControlFilter f(&sink);
    f.sputn(s.data(), static_cast<std::streamsize>(s.size()));
  }
  return sink.str();
}

SafeTerminalOutput::SafeTerminalOutput()
    : cout_(std::cout.rdbuf()), cerr_(std::cerr.rdbuf()), out_(cout_), err_(cerr_) {
  std::cout.rdbuf(&out_);
  std::cerr.rdbuf(&err_);
}

SafeTerminalOutput::~SafeTerminalOutput() {
  std::cout.flush();
  std::cerr.flush();
  out_.Finish();
  err_.Finish();
  std::cout.rdbuf(cout_);
  std::cerr.rdbuf(cerr_);
}

}  // namespace gpupool::cli
