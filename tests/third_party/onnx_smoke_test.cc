// ONNX: build a one-node model with the protobuf classes, serialize and parse it back,
// and run shape inference and the checker on it.
#include <gtest/gtest.h>
#include <onnx/checker.h>
#include <onnx/onnx-ml.pb.h>
#include <onnx/shape_inference/implementation.h>

#include <string>

TEST(OnnxSmoke, BuildCheckInfer) {
  onnx::ModelProto model;
  model.set_ir_version(8);
  model.add_opset_import()->set_version(17);
  onnx::GraphProto* g = model.mutable_graph();
  g->set_name("g");
  onnx::NodeProto* n = g->add_node();
  n->set_op_type("Relu");
  n->add_input("x");
  n->add_output("y");
  onnx::ValueInfoProto* x = g->add_input();
  x->set_name("x");
  x->mutable_type()->mutable_tensor_type()->set_elem_type(onnx::TensorProto::FLOAT);
  x->mutable_type()->mutable_tensor_type()->mutable_shape()->add_dim()->set_dim_value(3);
  onnx::ValueInfoProto* y_info = g->add_output();
  y_info->set_name("y");
  y_info->mutable_type()->mutable_tensor_type()->set_elem_type(onnx::TensorProto::FLOAT);
  std::string bytes;
  ASSERT_TRUE(model.SerializeToString(&bytes));
  onnx::ModelProto back;
  ASSERT_TRUE(back.ParseFromString(bytes));
  // Shape inference fills in the output's shape, which the checker requires.
  onnx::shape_inference::InferShapes(back);
  EXPECT_NO_THROW(onnx::checker::check_model(back));
  const auto& y = back.graph().output(0).type().tensor_type();
  ASSERT_EQ(y.shape().dim_size(), 1);
  EXPECT_EQ(y.shape().dim(0).dim_value(), 3);
}
