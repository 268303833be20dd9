#pragma once
/// One visitor of a std::variant from several lambdas, one per alternative.

namespace redisgo {

template <class... F>
struct Overloaded : F... {
  using F::operator()...;
};
template <class... F>
Overloaded(F...) -> Overloaded<F...>;

}  // namespace redisgo
