#include "agent/gpu_probe.h"

#include <gtest/gtest.h>

#include "model/catalogue.h"

namespace gpupool {
namespace {

std::string ModelOf(std::string_view name, uint64_t memory_mib = 0, uint32_t pci = 0) {
  auto r = CatalogueModelFor(name, pci, memory_mib);
  return r.ok() ? *r : "error: " + r.error().message;
}

TEST(CatalogueModelFor, ProductStringsFromTheReference) {
  // shared/reference/gpu-partitioning.md §1.2.4: the SXM5 part reports "NVIDIA H100 80GB HBM3".
  EXPECT_EQ(ModelOf("NVIDIA H100 80GB HBM3", 81559), "h100-80gb");
  EXPECT_EQ(ModelOf("NVIDIA H100 80GB HBM3"), "h100-80gb");  // the name's 80GB decides
  // §1.2.2 (MIG guide Table 6, GFD product label): "A100-SXM4-40GB", with and without prefix.
  EXPECT_EQ(ModelOf("A100-SXM4-40GB"), "a100-40gb");
  EXPECT_EQ(ModelOf("NVIDIA A100-SXM4-40GB", 40960), "a100-40gb");
  // §1.2.5: the H100 NVL is the 94 GB part; its name carries no size.
  EXPECT_EQ(ModelOf("NVIDIA H100 NVL"), "h100-94gb");
  EXPECT_EQ(ModelOf("NVIDIA H100 NVL", 95830), "h100-94gb");
}

TEST(CatalogueModelFor, CommonProductStringsDecidedByMemory) {
  // Strings seen from nvidia-smi -L (not in the reference): the size comes from the name when
  // it has one, else from the memory NVML reports.
  EXPECT_EQ(ModelOf("NVIDIA A100-SXM4-80GB"), "a100-80gb");
  EXPECT_EQ(ModelOf("NVIDIA A100 80GB PCIe"), "a100-80gb");
  EXPECT_EQ(ModelOf("NVIDIA A100-PCIE-40GB"), "a100-40gb");
  EXPECT_EQ(ModelOf("NVIDIA H100 PCIe", 81559), "h100-80gb");
  EXPECT_EQ(ModelOf("NVIDIA H200", 143771), "h200-141gb");
  EXPECT_EQ(ModelOf("NVIDIA H200 NVL", 143771), "h200-141gb");
  EXPECT_EQ(ModelOf("NVIDIA B200", 183359), "b200-180gb");
  EXPECT_EQ(ModelOf("NVIDIA GB200", 189471), "gb200-186gb");
}

TEST(CatalogueModelFor, PciDeviceIdWinsOverTheName) {
  // §1.2.4-1.2.6 device IDs.
  EXPECT_EQ(ModelOf("something else", 0, 0x233010DE), "h100-80gb");
  EXPECT_EQ(ModelOf("", 0, 0x232110DE), "h100-94gb");
  EXPECT_EQ(ModelOf("", 0, 0x20B510DE), "a100-80gb");
  EXPECT_EQ(ModelOf("", 0, 0x233B10DE), "h200-141gb");
}

TEST(CatalogueModelFor, OutsideTheCatalogueOrAmbiguous) {
  // GH200 is not H200 and GB200 is not B200: tokens match whole.
  EXPECT_FALSE(CatalogueModelFor("NVIDIA GH200 480GB", 0, 0).ok());
  EXPECT_FALSE(CatalogueModelFor("Tesla V100-SXM2-16GB", 16384, 0).ok());
  EXPECT_FALSE(CatalogueModelFor("NVIDIA H800", 81559, 0).ok());
  EXPECT_FALSE(CatalogueModelFor("", 0, 0).ok());
  // An A100 of unknown size cannot be told apart.
  auto r = CatalogueModelFor("NVIDIA A100", 0, 0);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().code, ErrorCode::kNotFound);
  EXPECT_NE(r.error().message.find("several memory sizes"), std::string::npos);
}

TEST(CatalogueModelFor, EveryCatalogueModelRoundTripsThroughItsProductName) {
  const Catalogue cat = Catalogue::BuiltIn();
  for (const GpuModel& m : cat.models()) {
    const std::string_view product = ProductNameFor(m.name);
    ASSERT_FALSE(product.empty()) << m.name;
    EXPECT_EQ(ModelOf(product, m.memory_mib), m.name) << product;
  }
  EXPECT_EQ(ProductNameFor("v100"), "");
}

TEST(NormalizeBusId, PadsTheDomainAndUpperCases) {
  EXPECT_EQ(NormalizeBusId("0000:2a:00.0"), "00000000:2A:00.0");
  EXPECT_EQ(NormalizeBusId("00000000:2A:00.0"), "00000000:2A:00.0");
  EXPECT_EQ(NormalizeBusId(std::string_view("00000000:18:00.0\0junk", 21)), "00000000:18:00.0");
  EXPECT_EQ(NormalizeBusId(""), "");
}

}  // namespace
}  // namespace gpupool
