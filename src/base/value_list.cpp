#include "base/value_list.h"

#include <memory>

namespace ember {

Tensor make_container(DType kind, ValueList list) {
  auto owned = std::make_shared<ValueList>(std::move(list));
  const ValueList* data = owned.get();
  return Tensor(kind, Shape{}, data, std::shared_ptr<const void>(std::move(owned)));
}

const ValueList* container_list(const Tensor& t) {
  return dtype_is_container(t.dtype()) ? static_cast<const ValueList*>(t.data()) : nullptr;
}

Tensor clone_container(const Tensor& t) {
  const ValueList* list = container_list(t);
  if (!list) return Tensor(t.dtype(), t.shape(), nullptr);
  ValueList copy;
  copy.elem_dtype = list->elem_dtype;
  for (const Tensor& item : list->items) copy.items.push_back(item.clone());
  return make_container(t.dtype(), std::move(copy));
}

}  // namespace ember
